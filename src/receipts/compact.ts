import type { SettleResponse } from '@x402/core/types'
import { decodeJwt } from 'jose'
import { DELIVERY_RECEIPT } from './delivery.js'

/**
 * `extensions["delivery-receipt"].info` of a compact SettleResponse: the compact JWS, and copies
 * of its two digest claims so that a reader compares them without decoding it (the JWS is what
 * proves them).
 */
export interface CompactDeliveryInfo {
  /** The delivery receipt: a compact JWS (EdDSA, `typ` delivery-receipt+jwt). */
  receipt: string
  /** Its `input_sha256` claim: lower-case hex SHA-256 of the RFC 8785 form of the checked input. */
  input_sha256: string
  /** Its `result_sha256` claim: lower-case hex SHA-256 of the RFC 8785 form of the `result`. */
  result_sha256: string
}

/**
 * A SettleResponse cut to what a reader of every result needs (an MCP result's `_meta` is read
 * into an agent's context on every call): the spec's `success`, `errorReason` and `payer` when
 * present, `transaction`, `network`, the scheme's `extra` when present (a `batch-settlement`
 * payment's channel state, from which the payer's client keeps its channel in step), and the
 * delivery receipt as `{info: {receipt, input_sha256, result_sha256}}` in the place a full
 * SettleResponse holds it, so that its readers read both. Left out: the receipt's JSON Schema (in
 * `/.well-known/x402` and docs/receipts.md), the `offer-receipt` receipt (served on HTTP's
 * `PAYMENT-RESPONSE`), `amount` (a receipt claim).
 *
 * @example
 * compactSettlement({ success: true, transaction: '0xb69c…', network: 'eip155:8453',
 *   payer: '0x857b…', amount: '1000', extensions: { 'delivery-receipt': { info: { receipt }, schema },
 *   'offer-receipt': { … } } })
 * // { success: true, payer: '0x857b…', transaction: '0xb69c…', network: 'eip155:8453',
 * //   extensions: { 'delivery-receipt': { info: { receipt, input_sha256: 'd64b…', result_sha256: '5202…' } } } }
 */
export function compactSettlement(settlement: SettleResponse): SettleResponse {
  const info = deliveryInfo(settlement)
  return {
    success: settlement.success,
    ...(settlement.errorReason === undefined ? {} : { errorReason: settlement.errorReason }),
    ...(settlement.payer === undefined ? {} : { payer: settlement.payer }),
    transaction: settlement.transaction,
    network: settlement.network,
    ...(settlement.extra === undefined ? {} : { extra: settlement.extra }),
    ...(info ? { extensions: { [DELIVERY_RECEIPT]: { info } } } : {}),
  }
}

/** The compact info of the settlement's delivery receipt; undefined when it carries none. */
function deliveryInfo(settlement: SettleResponse): CompactDeliveryInfo | undefined {
  const extension = settlement.extensions?.[DELIVERY_RECEIPT] as
    | { info?: { receipt?: unknown } }
    | undefined
  const receipt = extension?.info?.receipt
  if (typeof receipt !== 'string') return undefined
  // The service's own receipt, signed moments ago: its claims are read, not verified.
  const claims = decodeJwt(receipt)
  return {
    receipt,
    input_sha256: String(claims.input_sha256),
    result_sha256: String(claims.result_sha256),
  }
}
