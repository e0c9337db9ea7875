import { jsonTextDeeperThan } from '../json-bounds.js'

/** RFC 4648 section 4 alphabet with at most two padding characters: what the SDK's decoders accept. */
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const utf8 = new TextDecoder()

/**
 * Decodes a `PAYMENT-SIGNATURE` header (x402 v2 HTTP transport) as `@x402/core/http`'s decoder
 * does, accepting and refusing the same texts: the RFC 4648 alphabet, then `atob`'s rules (a padded
 * text is a whole number of 4-character groups; an unpadded one does not leave a single character
 * over), UTF-8 with replacement characters and a leading byte order mark dropped, then
 * `JSON.parse`. Also gives the JSON's size in bytes. JSON nested deeper than `maxDepth` is refused
 * (`depth`) before it is parsed: no level of it is built.
 *
 * Ours because the SDK's decoder builds the bytes one character at a time from `atob`'s binary
 * string; Buffer decodes in native code.
 *
 * @example decodePaymentHeader('eyJ4NDAyVmVyc2lvbiI6Mn0=') // { value: { x402Version: 2 }, bytes: 17 }
 * @example decodePaymentHeader('not base64!') // { problem: 'base64' }
 */
export function decodePaymentHeader(
  text: string,
  maxDepth = Number.POSITIVE_INFINITY,
): { value: unknown; bytes: number } | { problem: 'base64' | 'json' | 'depth' } {
  if (!BASE64.test(text) || (text.includes('=') ? text.length % 4 !== 0 : text.length % 4 === 1)) {
    return { problem: 'base64' }
  }
  const bytes = Buffer.from(text, 'base64')
  const json = utf8.decode(bytes)
  if (jsonTextDeeperThan(json, maxDepth)) return { problem: 'depth' }
  try {
    return { value: JSON.parse(json), bytes: bytes.length }
  } catch {
    return { problem: 'json' }
  }
}
