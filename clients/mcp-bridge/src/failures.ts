import type { CallToolResult } from '@modelcontextprotocol/client'
import type { ReceiptFailureCode } from './receipts.js'

/**
 * Result `_meta` key of the failure envelope on every `isError` result, the same key the service
 * uses, so a client finds the machine-readable `code` in one place whoever refused the call.
 */
export const FAILURE_META_KEY = 'payload-tools/failure'

/**
 * Codes of the calls the bridge itself refuses. Before signing, nothing was charged; in all but
 * `payment_outcome_unknown`, `settlement_unknown` and the receipt codes, nothing was signed
 * either, or the signed payment was never sent.
 *
 * - `service_unreachable`: the service did not answer the unpaid call (or the listing);
 * - `rate_limited`: the service refused with HTTP 429 (too many unpaid requests from this client)
 *   and the bridge gave up: no `Retry-After`, one longer than `MAX_RETRY_AFTER_SECONDS`, or a
 *   second 429 after waiting it out once; `retry_after` gives the seconds when known;
 * - `invalid_request`: the service's free input check refused the arguments;
 * - `no_payable_rail`: the 402 offers no `exact` USDC rail this wallet holds a key for;
 * - `price_mismatch`: the 402 asks another amount than `tools/list` advertised;
 * - `price_unlisted`: `tools/list` advertised no price for the tool, so none can be checked;
 * - `spend_cap_exceeded`: the call would pass `MAX_USDC_PER_CALL`, `_SESSION` or `_DAY`;
 * - `day_file_unavailable`: `MAX_USDC_PER_DAY` is set but the day file cannot be read;
 * - `signing_failed`: the x402 client could not sign (e.g. the Solana RPC is unreachable);
 * - `deposit_cap_exceeded`: paying from a prepaid channel needs a deposit above
 *   `MAX_USDC_DEPOSIT`;
 * - `refund_failed`: the refund of the prepaid channel was refused (nothing to refund, the service
 *   refused it); nothing moved;
 * - `payment_outcome_unknown`: the paid call got no answer; the payment may have settled, and it
 *   is counted against the caps;
 * - `settlement_unknown`: the service answered `settlement_unknown` (the tool ran, its settlement's
 *   outcome is unknown) to the paid call and to every resend of the same payment; the payment may
 *   have moved and counts against the caps (`resent` gives the resends);
 * - `receipt_missing`, `receipt_invalid`, `receipt_mismatch`: the call was paid and settled, but
 *   its signed delivery receipt is absent, not the service's, or for another input, result or
 *   payment (src/receipts.ts): the result is withheld and the payment counts against the caps.
 */
export type BridgeFailureCode =
  | 'service_unreachable'
  | 'rate_limited'
  | 'invalid_request'
  | 'no_payable_rail'
  | 'price_mismatch'
  | 'price_unlisted'
  | 'spend_cap_exceeded'
  | 'day_file_unavailable'
  | 'signing_failed'
  | 'deposit_cap_exceeded'
  | 'refund_failed'
  | 'payment_outcome_unknown'
  | 'settlement_unknown'
  | ReceiptFailureCode

/** A call the bridge refuses, with its code and extra envelope fields (e.g. the cap). */
export class BridgeFailure extends Error {
  override readonly name = 'BridgeFailure'
  constructor(
    readonly code: BridgeFailureCode,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
  }
}

/**
 * The `isError` result of a call the bridge refused: `structuredContent` and
 * `_meta["payload-tools/failure"]` are the failure envelope `{ok: false, error, code, …details}`
 * (the shape the service's output schemas allow on errors), `content` the message as text.
 *
 * @example
 * failureResult(new BridgeFailure('price_mismatch', 'payload_hash asks 0.002 USDC …'))
 * // { isError: true, content: [{ type: 'text', text: 'payload_hash asks …' }],
 * //   structuredContent: { ok: false, error: 'payload_hash asks …', code: 'price_mismatch' }, … }
 */
export function failureResult(failure: BridgeFailure): CallToolResult {
  const envelope = { ok: false, error: failure.message, code: failure.code, ...failure.details }
  return {
    isError: true,
    content: [{ type: 'text', text: failure.message }],
    structuredContent: envelope,
    _meta: { [FAILURE_META_KEY]: envelope },
  }
}
