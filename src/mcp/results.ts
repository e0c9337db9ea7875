import type { CallToolResult } from '@modelcontextprotocol/server'
import type { SettleResponse } from '@x402/core/types'
import { X402 } from '../descriptions/service-info.js'
import { describeFailure } from '../failures/describe.js'
import { compactSettlement } from '../receipts/index.js'

/** `params._meta` key of the PaymentPayload on `tools/call` (x402 v2 MCP transport). */
export const PAYMENT_META_KEY = X402.mcpPaymentMeta
/** Result `_meta` key of the SettleResponse (x402 v2 MCP transport). */
export const PAYMENT_RESPONSE_META_KEY = X402.mcpResponseMeta
/**
 * Result `_meta` key of the failure envelope `{ok: false, error, code, …}` on every `isError`
 * result, so that a client finds the machine-readable `code` in one place, payment failures
 * included (whose `structuredContent` is the PaymentRequired).
 */
export const FAILURE_META_KEY = 'payload-tools/failure'

/**
 * The result of a settled call: `structuredContent` is the HTTP envelope `{ok: true, result}`,
 * `content[0].text` its JSON, and `_meta["x402/payment-response"]` the SettleResponse in its
 * compact form ({@link compactSettlement}: about 1.2 KB instead of 2.6, read by an agent on every
 * call; HTTP's `PAYMENT-RESPONSE` keeps the full one).
 *
 * @example
 * paidResult({ hex: 'ba78…' }, { success: true, transaction: '0x…', network: 'eip155:8453', … })
 * // { content: [{ type: 'text', text: '{"ok":true,"result":{"hex":"ba78…"}}' }],
 * //   structuredContent: { ok: true, result: { hex: 'ba78…' } },
 * //   _meta: { 'x402/payment-response': { success: true, payer, transaction, network,
 * //     extensions: { 'delivery-receipt': { info: { receipt, input_sha256, result_sha256 } } } } } }
 */
export function paidResult(result: unknown, settlement: SettleResponse): CallToolResult {
  const envelope = { ok: true as const, result }
  return {
    content: [{ type: 'text', text: JSON.stringify(envelope) }],
    structuredContent: envelope,
    _meta: { [PAYMENT_RESPONSE_META_KEY]: compactSettlement(settlement) },
  }
}

/**
 * The `isError` result of a failed call; never carries tool output.
 *
 * - payment failures (no payment, invalid, rejected, duplicate, settlement failed):
 *   `structuredContent` is the x402 v2 PaymentRequired (MCP transport spec); after a failed
 *   settlement `_meta["x402/payment-response"]` also holds the facilitator's SettleResponse;
 * - every other failure (`invalid_request`, a tool code, `facilitator_unavailable`,
 *   `internal_error`): `structuredContent` is the failure envelope.
 *
 * `content[0].text` is always the JSON of `structuredContent`, and
 * `_meta["payload-tools/failure"]` always the failure envelope with the same `code` as HTTP.
 */
export function failureResult(error: unknown): CallToolResult {
  const failure = describeFailure(error)
  const meta: Record<string, unknown> = { [FAILURE_META_KEY]: failure.body }
  let structured: Record<string, unknown> = failure.body
  if (failure.paymentRequired) {
    structured = { ...failure.paymentRequired }
    if (failure.settlement) meta[PAYMENT_RESPONSE_META_KEY] = failure.settlement
  }
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(structured) }],
    structuredContent: structured,
    _meta: meta,
  }
}
