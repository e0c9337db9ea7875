/**
 * Base64 of the UTF-8 JSON of an x402 object: the wire form of the `PAYMENT-REQUIRED` and
 * `PAYMENT-RESPONSE` headers (x402 v2 HTTP transport), byte for byte what `@x402/core/http`'s
 * encoders produce and decode.
 *
 * Ours because the SDK's encoder builds a binary string one character at a time before `btoa`, the
 * largest cost of the unpaid path; Buffer does it in native code. (`encodePaymentResponseHeader` also drops `extensionResponses`,
 * which is not meant for buyers; so does {@link settlementHeader}.)
 *
 * @example
 * x402Header({ x402Version: 2 }) // 'eyJ4NDAyVmVyc2lvbiI6Mn0='
 */
export function x402Header(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64')
}

const encoded = new WeakMap<object, string>()

/**
 * {@link x402Header} of a PaymentRequired, memoised per object: the gate reuses one object for
 * every unpaid request of a tool.
 */
export function paymentRequiredHeader(paymentRequired: object): string {
  let header = encoded.get(paymentRequired)
  if (header === undefined) {
    header = x402Header(paymentRequired)
    encoded.set(paymentRequired, header)
  }
  return header
}

/** The `PAYMENT-RESPONSE` header of a SettleResponse, without the facilitator-only `extensionResponses`. */
export function settlementHeader(settlement: { extensionResponses?: unknown }): string {
  const { extensionResponses: _, ...buyerFacing } = settlement
  return x402Header(buyerFacing)
}
