import type { ResourceServerExtension, SettleResponse } from '@x402/core/types'
import { createLocalJWKSet } from 'jose'
import {
  DELIVERY_RECEIPT,
  type Delivery,
  type ReceiptVerdict,
  signDeliveryReceipt,
  verifyDeliveryReceipt,
} from './delivery.js'
import type { KeySource, PublicJwk, SigningKey } from './keys.js'
import { createOfferReceipt, OFFER_RECEIPT } from './offer-receipt.js'
import {
  buildDidDocument,
  buildJwks,
  type DidDocument,
  didDocumentPath,
  didWeb,
  type ReceiptJwks,
} from './publish.js'

export { type CompactDeliveryInfo, compactSettlement } from './compact.js'
export {
  DELIVERY_RECEIPT,
  DELIVERY_RECEIPT_TYPE,
  type Delivery,
  type DeliveryClaims,
  deliveryClaimsSchema,
  MAX_RECEIPT_CHARS,
  type ReceiptVerdict,
  type SignatureFailure,
  type SignatureVerdict,
} from './delivery.js'
export {
  type KeySource,
  type PublicJwk,
  parseRetiredKeys,
  parseSigningKey,
  resolveSigningKey,
  type SigningKey,
} from './keys.js'
export { OFFER_RECEIPT, OFFER_VALIDITY_SECONDS } from './offer-receipt.js'
export { type DidDocument, didDocumentPath, JWKS_PATH, type ReceiptJwks } from './publish.js'
export {
  type CheckedGivenInput,
  createVerification,
  RECEIPTS_VERIFY_PATH,
  type VerificationOptions,
  type VerificationRequest,
  type VerifyAnswer,
  type VerifyFailure,
  verifyAnswerJsonSchema,
  verifyRequestSchema,
} from './verification.js'

/** JSON Schema of `extensions["delivery-receipt"].info` in a SettleResponse. */
export const DELIVERY_RECEIPT_INFO_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    receipt: {
      type: 'string',
      description:
        'Compact JWS (EdDSA, kid in its header, typ delivery-receipt+jwt) of the delivery claims; verify it against /.well-known/jwks.json.',
    },
  },
  required: ['receipt'],
} as const

export interface ReceiptsOptions {
  /** The service's public base URL (PUBLIC_BASE_URL): every receipt's `iss`, and the did:web. */
  issuer: string
  /** The key every receipt and offer is signed with. */
  signingKey: SigningKey
  /** Public keys of retired signing keys, still published so that their receipts verify. */
  retiredKeys?: readonly PublicJwk[]
  /** Where the signing key came from (reported at start). */
  keySource?: KeySource
  /** Clock in epoch milliseconds (the offers' signing periods). */
  now?: () => number
}

/**
 * The service's receipts: signed delivery receipts (jose, EdDSA over Ed25519), the official
 * `offer-receipt` extension signed with the same key, the JWKS and DID document that publish the
 * keys, and verification. Imports nothing of the service: the gate hands it facts and digests.
 */
export interface Receipts {
  /** `kid` of the current key: its RFC 7638 thumbprint. */
  readonly kid: string
  readonly keySource: KeySource
  /**
   * Signs one delivery receipt.
   *
   * @param delivery - every claim but `iss`; the digests are computed by the caller (never here)
   * @returns the compact JWS
   * @throws {Error} when a claim is malformed (nothing is signed)
   */
  deliveryReceipt(delivery: Delivery): Promise<string>
  /**
   * The gate's one call after a paid call: the SettleResponse with
   * `extensions["delivery-receipt"]` = `{info: {receipt}, schema}` and, when it names the payer
   * (a call settled now, not a replay), the official `extensions["offer-receipt"]` receipt.
   *
   * @returns a new SettleResponse; the argument is not changed
   * @throws {Error} when a claim is malformed
   */
  deliver(settlement: SettleResponse, delivery: Delivery): Promise<SettleResponse>
  /** The JWKS: current key first, then the retired ones. */
  jwks(): ReceiptJwks
  /** The did:web DID document (the `offer-receipt` kids resolve through it). */
  didDocument(): DidDocument
  /** Where the DID document is served, e.g. `/.well-known/did.json`. */
  readonly didDocumentPath: string
  /** Verifies a delivery receipt's signature (any published key) and claims; never throws. */
  verify(receipt: string): Promise<ReceiptVerdict>
  /**
   * The official `offer-receipt` extension: `declaration` goes into every PaymentRequired's
   * extensions, `extension` is registered on every x402ResourceServer.
   */
  offerReceipt: { declaration: Record<string, unknown>; extension: ResourceServerExtension }
  /**
   * The offers' signing period: a PaymentRequired cached in another period carries offers that
   * are no longer served, so a cache of PaymentRequired keys on it.
   */
  offerEpoch(): number
}

/**
 * Creates the receipts of the service.
 *
 * @example
 * const { key, source } = resolveSigningKey(process.env.RECEIPT_SIGNING_KEY, './data')
 * const receipts = createReceipts({ issuer: 'https://tools.example', signingKey: key, keySource: source })
 * const settled = await receipts.deliver(settlement, { tool: 'hash', input_sha256, result_sha256, … })
 * settled.extensions['delivery-receipt'].info.receipt // 'eyJhbGciOiJFZERTQSIs…'
 */
export function createReceipts(options: ReceiptsOptions): Receipts {
  const { issuer, signingKey } = options
  const kid = signingKey.publicJwk.kid
  const jwks = buildJwks(signingKey.publicJwk, options.retiredKeys ?? [])
  const keySet = createLocalJWKSet(jwks)
  const did = didWeb(issuer)
  const didDocument = buildDidDocument(did, jwks)
  const offers = createOfferReceipt(signingKey, `${did}#${kid}`, options.now)

  const deliveryReceipt = (delivery: Delivery) =>
    signDeliveryReceipt(signingKey, { iss: issuer, ...delivery })

  return {
    kid,
    keySource: options.keySource ?? 'configured',
    deliveryReceipt,
    async deliver(settlement, delivery) {
      const [receipt, official] = await Promise.all([
        deliveryReceipt(delivery),
        offers.receiptFor(settlement, delivery.resource),
      ])
      return {
        ...settlement,
        extensions: {
          ...settlement.extensions,
          ...(official === undefined ? {} : { [OFFER_RECEIPT]: official }),
          [DELIVERY_RECEIPT]: { info: { receipt }, schema: DELIVERY_RECEIPT_INFO_SCHEMA },
        },
      }
    },
    jwks: () => jwks,
    didDocument: () => didDocument,
    didDocumentPath: didDocumentPath(issuer),
    async verify(receipt) {
      const verdict = await verifyDeliveryReceipt(receipt, keySet, issuer)
      return verdict.valid
        ? { ...verdict, key: verdict.kid === kid ? 'current' : 'retired' }
        : verdict
    },
    offerReceipt: { declaration: offers.declaration, extension: offers.extension },
    offerEpoch: offers.epoch,
  }
}
