import { createHash } from 'node:crypto'
import type { CallToolResult, Tool } from '@modelcontextprotocol/client'
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types'
import canonicalize from 'canonicalize'
import { createRemoteJWKSet, errors, type JWTVerifyGetKey, jwtVerify } from 'jose'

/** Key of the service's delivery receipt in a SettleResponse's `extensions`. */
export const DELIVERY_RECEIPT = 'delivery-receipt'
/** `typ` of a delivery receipt's JWS header. */
export const DELIVERY_RECEIPT_TYPE = 'delivery-receipt+jwt'
/** `tools/list` entry `_meta` key of the service's tool id, the receipt's `tool` claim. */
export const TOOL_ID_META_KEY = 'payload-tools/tool'

/**
 * Why a receipt was refused; each withholds the result (the payment did settle and counts):
 * - `receipt_missing`: the paid result carries no delivery receipt;
 * - `receipt_invalid`: not signed by a key of the service's JWKS (`reason`: `unknown_key`,
 *   `bad_signature`, `malformed`, `not_a_delivery_receipt`, `keys_unavailable`);
 * - `receipt_mismatch`: signed by the service, but for another call: `mismatched` names the
 *   claims that differ (`input_sha256`, `result_sha256`, `tool`, `transaction`, …).
 */
export type ReceiptFailureCode = 'receipt_missing' | 'receipt_invalid' | 'receipt_mismatch'

/** A receipt that does not prove this delivery, with the code and details for the failure. */
export class ReceiptRefused extends Error {
  override readonly name = 'ReceiptRefused'
  constructor(
    readonly code: ReceiptFailureCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/** One paid call as the bridge saw it. */
export interface PaidCall {
  /** The service's listing of the tool: its input schema (with defaults) and `_meta`. */
  tool: Tool
  /** The arguments the bridge sent (before the service applied its defaults). */
  args: Record<string, unknown> | undefined
  /** The service's paid answer. */
  paid: CallToolResult
  /** Its SettleResponse (`_meta["x402/payment-response"]`). */
  settlement: SettleResponse | undefined
  /** The offer the bridge signed. */
  offer: PaymentRequirements
  /** The payment it sent: a channel payment's receipt binds its channel and cumulative amount. */
  payment?: PaymentPayload
}

/** Checks the delivery receipt of every paid result. */
export interface ReceiptChecker {
  /**
   * @returns the verified claims
   * @throws {ReceiptRefused} when the receipt is absent, not the service's, or for another call
   */
  check(call: PaidCall): Promise<Record<string, unknown>>
}

/** SHA-256 (lower-case hex) of the RFC 8785 canonical JSON of a value. */
export function canonicalSha256(value: unknown): string {
  return createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The arguments as the service checks them: every property the JSON Schema gives a `default`
 * and the arguments lack gets it, in nested objects too. That is what the service's Zod schemas
 * do (their JSON Schema is generated from them, defaults included), so the digests agree; a
 * schema default under `$ref`, `anyOf` or array `items` is not followed (the service has none: a
 * test of the service repository compares both digests for every tool).
 *
 * @example applyDefaults({ properties: { algorithm: { default: 'SHA-256' } } }, { input: 'abc' })
 * // { input: 'abc', algorithm: 'SHA-256' }
 */
export function applyDefaults(schema: unknown, value: unknown): unknown {
  if (!isObject(schema) || !isObject(value) || !isObject(schema.properties)) return value
  const out: Record<string, unknown> = { ...value }
  for (const [name, property] of Object.entries(schema.properties)) {
    if (!isObject(property)) continue
    if (Object.hasOwn(out, name)) out[name] = applyDefaults(property, out[name])
    else if (Object.hasOwn(property, 'default')) out[name] = structuredClone(property.default)
  }
  return out
}

/**
 * The claims a channel payment's receipt holds (docs/receipts.md of the service): the channel id
 * and the voucher's cumulative amount; no transaction for a voucher (it has none), the deposit's
 * for a deposit. Its `amount` is the price the call was charged, as for any call.
 */
function channelClaims(
  payment: PaymentPayload | undefined,
  settlement: SettleResponse | undefined,
): Record<string, unknown> {
  if (payment?.accepted.scheme !== 'batch-settlement') return {}
  const payload = payment.payload as {
    voucher?: { channelId?: string; maxClaimableAmount?: string }
  }
  return {
    channel: payload.voucher?.channelId?.toLowerCase(),
    cumulative: payload.voucher?.maxClaimableAmount,
    transaction: settlement?.transaction || undefined,
  }
}

function describeJoseFailure(error: unknown): { reason: string; message: string } {
  if (error instanceof errors.JWKSNoMatchingKey) {
    return { reason: 'unknown_key', message: "its key is not in the service's JWKS" }
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return { reason: 'bad_signature', message: 'its signature does not match its content' }
  }
  if (error instanceof errors.JWKSTimeout || error instanceof errors.JWKSInvalid) {
    return { reason: 'keys_unavailable', message: "the service's JWKS could not be read" }
  }
  if (
    error instanceof errors.JWTClaimValidationFailed ||
    error instanceof errors.JOSEAlgNotAllowed
  ) {
    return { reason: 'not_a_delivery_receipt', message: 'it is not a delivery receipt' }
  }
  if (error instanceof errors.JOSEError) {
    return { reason: 'malformed', message: `it is not a valid JWS (${error.message})` }
  }
  // fetch failed: the JWKS endpoint did not answer.
  return {
    reason: 'keys_unavailable',
    message: `the service's JWKS could not be fetched (${(error as Error)?.message ?? error})`,
  }
}

/**
 * The receipt checker: verifies each delivery receipt with jose against the service's JWKS
 * (`<service>/.well-known/jwks.json`, fetched on first use, cached, fetched again for a `kid` it
 * does not know: a key rotation), then compares its claims with the call: the input the bridge
 * sent (defaults applied from the tool's listed schema), the result it received, the tool, and
 * the settlement and offer it paid. The keys come from the service the bridge paid, which is
 * what binds a receipt to it (`iss` and `resource` name the service's public URL, which need not
 * be the URL the bridge was given).
 *
 * @param options.keys - the key set (tests); by default the service's remote JWKS
 * @example
 * const receipts = createReceiptChecker({ serviceUrl: 'https://tools.example' })
 * await receipts.check({ tool, args, paid, settlement, offer }) // the claims, or throws
 */
export function createReceiptChecker(options: {
  serviceUrl: string
  keys?: JWTVerifyGetKey
}): ReceiptChecker {
  const keys =
    options.keys ?? createRemoteJWKSet(new URL(`${options.serviceUrl}/.well-known/jwks.json`))
  return {
    async check({ tool, args, paid, settlement, offer, payment }) {
      const facts = {
        transaction: settlement?.transaction ?? '',
        network: settlement?.network ?? offer.network,
      }
      const extension = settlement?.extensions?.[DELIVERY_RECEIPT] as
        | { info?: { receipt?: unknown } }
        | undefined
      const receipt = extension?.info?.receipt
      if (typeof receipt !== 'string') {
        throw new ReceiptRefused(
          'receipt_missing',
          `the service settled the payment but sent no delivery receipt (extensions["${DELIVERY_RECEIPT}"])`,
          facts,
        )
      }
      let claims: Record<string, unknown>
      try {
        ;({ payload: claims } = await jwtVerify(receipt, keys, {
          algorithms: ['EdDSA'],
          typ: DELIVERY_RECEIPT_TYPE,
        }))
      } catch (error) {
        const { reason, message } = describeJoseFailure(error)
        throw new ReceiptRefused('receipt_invalid', `its delivery receipt is refused: ${message}`, {
          ...facts,
          reason,
          receipt,
        })
      }
      const result = isObject(paid.structuredContent) ? paid.structuredContent.result : undefined
      const expected: Record<string, unknown> = {
        input_sha256: canonicalSha256(applyDefaults(tool.inputSchema, args ?? {})),
        result_sha256: canonicalSha256(result),
        transaction: settlement?.transaction,
        network: settlement?.network,
        amount: offer.amount,
        asset: offer.asset,
        pay_to: offer.payTo,
        ...channelClaims(payment, settlement),
      }
      const toolId = tool._meta?.[TOOL_ID_META_KEY]
      if (typeof toolId === 'string') expected.tool = toolId
      const mismatched = Object.entries(expected)
        .filter(([claim, value]) => claims[claim] !== value)
        .map(([claim]) => claim)
      if (mismatched.length > 0) {
        throw new ReceiptRefused(
          'receipt_mismatch',
          `its delivery receipt does not match this call (${mismatched.join(', ')})`,
          { ...facts, mismatched, receipt },
        )
      }
      return claims
    },
  }
}
