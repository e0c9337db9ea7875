import { sign } from 'node:crypto'
import type {
  PaymentRequiredContext,
  ResourceServerExtension,
  SettleResponse,
  SettleResultContext,
} from '@x402/core/types'
import {
  createJWSOfferReceiptIssuer,
  createOfferReceiptExtension,
  declareOfferReceiptExtension,
  type JWSSigner,
  OFFER_RECEIPT,
} from '@x402/extensions/offer-receipt'
import type { SigningKey } from './keys.js'

export { OFFER_RECEIPT }

/**
 * Seconds a signed offer commits to its terms (`validUntil` = signing time + this). The
 * extension's own default is the requirements' `maxTimeoutSeconds` (60 s here); longer, so that
 * one signature serves many 402s (see {@link OFFER_REFRESH_SECONDS}).
 */
export const OFFER_VALIDITY_SECONDS = 300

/**
 * How long one signed offer is served, in seconds: half its validity, so that every offer a client
 * receives has at least 150 s left, more than the 60 s it has to pay. The extension lets the
 * server choose: `validUntil` is optional, the server "MAY reject" a payment past it, and the
 * offer's `info.offers` is a dynamic field the payment's echo is not compared on.
 */
export const OFFER_REFRESH_SECONDS = OFFER_VALIDITY_SECONDS / 2

/** The official `offer-receipt` extension (x402 extensions 2.27, JWS format), as the service uses it. */
export interface OfferReceipt {
  /**
   * The declaration to put in a PaymentRequired's `extensions` (`{"offer-receipt": {…}}`); the
   * registered {@link extension} replaces it with the signed offers.
   */
  declaration: Record<string, unknown>
  /** The extension to register on every `x402ResourceServer` (`registerExtension`). */
  extension: ResourceServerExtension
  /**
   * The `extensions["offer-receipt"]` of a SettleResponse: `{info: {receipt}, schema}` with the
   * signed receipt (version, network, resourceUrl, payer, issuedAt, transaction); undefined when
   * the settlement failed or names no payer (a replay: the guard does not keep payers).
   */
  receiptFor(settlement: SettleResponse, resourceUrl: string): Promise<unknown>
  /** Which signing period it is: a cached PaymentRequired of another period carries old offers. */
  epoch(): number
}

/**
 * Creates the `offer-receipt` extension over the SDK's own (`createOfferReceiptExtension`,
 * `createJWSOfferReceiptIssuer`), signing with the receipts key (EdDSA; the JWS is assembled by
 * the SDK, the Ed25519 signature made by node:crypto).
 *
 * What differs from registering the SDK's extension as it is:
 * - offers are signed once per resource, requirements and {@link OFFER_REFRESH_SECONDS}, not per
 *   402: the unpaid 402 is the hot path, and its PaymentRequired is cached per tool;
 * - the receipt is issued by {@link OfferReceipt.receiptFor}, which the gate calls with the
 *   resource URL; the SDK's settlement hook reads it from an HTTP transport context the gate does
 *   not pass, and a receipt made at settlement would go into the guard's replay record, which
 *   must not hold the payer address the receipt names.
 *
 * @param kid - the key's DID URL (`did:web:<host>#<thumbprint>`): the extension's JWS `kid`
 * @param now - clock in epoch milliseconds (the signing periods)
 * @example
 * const offers = createOfferReceipt(key, 'did:web:tools.example#kPrK…', Date.now)
 * server.registerExtension(offers.extension)
 */
export function createOfferReceipt(
  key: SigningKey,
  kid: string,
  now: () => number = Date.now,
): OfferReceipt {
  const signer: JWSSigner = {
    kid,
    format: 'jws',
    algorithm: 'EdDSA',
    sign: async (payload) => sign(null, payload, key.privateKey).toString('base64url'),
  }
  const official = createOfferReceiptExtension(createJWSOfferReceiptIssuer(kid, signer))
  const declaration = declareOfferReceiptExtension({
    includeTxHash: true,
    offerValiditySeconds: OFFER_VALIDITY_SECONDS,
  })
  const epoch = () => Math.floor(now() / 1000 / OFFER_REFRESH_SECONDS)

  // Signed offers of the current period by resource URL and requirements: bounded by the tools,
  // transports and rails, and emptied when the period changes.
  let cachedEpoch = epoch()
  const cache = new Map<string, Promise<unknown>>()
  const enrich = official.enrichPaymentRequiredResponse
  if (!enrich || !official.enrichSettlementResponse) {
    throw new Error('@x402/extensions offer-receipt lacks its enrichment hooks')
  }

  const extension: ResourceServerExtension = {
    ...official,
    enrichPaymentRequiredResponse(declared: unknown, context: PaymentRequiredContext) {
      const current = epoch()
      if (current !== cachedEpoch) {
        cache.clear()
        cachedEpoch = current
      }
      const cacheKey = `${context.resourceInfo.url}\n${JSON.stringify(context.requirements)}`
      let offers = cache.get(cacheKey)
      if (!offers) {
        offers = enrich(declared, context)
        cache.set(cacheKey, offers)
        // The SDK answers undefined when no offer could be signed: try again next time.
        offers.then(
          (value) => value === undefined && cache.delete(cacheKey),
          () => cache.delete(cacheKey),
        )
      }
      return offers
    },
    enrichSettlementResponse: undefined,
  }

  const settlementHook = official.enrichSettlementResponse
  return {
    declaration,
    extension,
    epoch,
    async receiptFor(settlement, resourceUrl) {
      if (!settlement.success || !settlement.payer) return undefined
      // The SDK's hook reads the result and the resource URL of an HTTP transport context only.
      const context = {
        result: settlement,
        transportContext: { request: { adapter: { getUrl: () => resourceUrl } } },
      } as unknown as SettleResultContext
      return settlementHook(declaration[OFFER_RECEIPT], context)
    },
  }
}
