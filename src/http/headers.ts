/**
 * Base64 of the UTF-8 JSON of an x402 object: the wire form of the `PAYMENT-REQUIRED` and
 * `PAYMENT-RESPONSE` headers (x402 v2 HTTP transport), byte for byte what `@x402/core/http`'s
 * encoders produce and decode.
 *
 * Ours because the SDK's encoder builds a binary string one character at a time before `btoa`:
 * about 0.25 ms per 402 for our 3–8 KiB PaymentRequired, the largest cost of the unpaid path.
 * Buffer does it in native code. (`encodePaymentResponseHeader` also drops `extensionResponses`,
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

/** RFC 4648 section 4 alphabet with at most two padding characters: what the SDK's decoders accept. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const utf8 = new TextDecoder()

/**
 * Decodes an x402 header (`PAYMENT-SIGNATURE`) as `@x402/core/http`'s decoders do, accepting and
 * refusing the same texts: the RFC 4648 alphabet, then `atob`'s rules (a padded text is a whole
 * number of 4-character groups; an unpadded one does not leave a single character over), UTF-8
 * with replacement characters and a leading byte order mark dropped, then `JSON.parse`. Also
 * gives the JSON's size in bytes, so that the payment need not be serialised again to be measured.
 *
 * Ours because the SDK's decoder builds the bytes one character at a time from `atob`'s binary
 * string: 71 µs against 36 µs for a 6.5 KB header here (bench/README.md, "Paid calls against
 * the peer").
 *
 * @example readX402Header('eyJ4NDAyVmVyc2lvbiI6Mn0=') // { value: { x402Version: 2 }, bytes: 17 }
 * @example readX402Header('not base64!') // { problem: 'base64' }
 */
export function readX402Header(
  text: string,
): { value: unknown; bytes: number } | { problem: 'base64' | 'json' } {
  if (!BASE64.test(text) || (text.includes('=') ? text.length % 4 !== 0 : text.length % 4 === 1)) {
    return { problem: 'base64' }
  }
  const bytes = Buffer.from(text, 'base64')
  try {
    return { value: JSON.parse(utf8.decode(bytes)), bytes: bytes.length }
  } catch {
    return { problem: 'json' }
  }
}
