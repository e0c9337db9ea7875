import { ToolError } from '../types.js'

const HEX = '0123456789ABCDEF'

function isUnreserved(byte: number): boolean {
  return (
    (byte >= 0x41 && byte <= 0x5a) ||
    (byte >= 0x61 && byte <= 0x7a) ||
    (byte >= 0x30 && byte <= 0x39) ||
    byte === 0x2d ||
    byte === 0x2e ||
    byte === 0x5f ||
    byte === 0x7e
  )
}

function hexValue(byte: number | undefined): number {
  if (byte === undefined) return -1
  if (byte >= 0x30 && byte <= 0x39) return byte - 0x30
  if (byte >= 0x41 && byte <= 0x46) return byte - 0x37
  if (byte >= 0x61 && byte <= 0x66) return byte - 0x57
  return -1
}

/**
 * Percent-encodes every byte outside the RFC 3986 section 2.3 unreserved set
 * (`A-Z a-z 0-9 - . _ ~`) as `%XX` with uppercase digits. Equals `encodeURIComponent` plus
 * `!'()*` for UTF-8 text, and works byte by byte so that non-UTF-8 bytes encode too.
 *
 * @example percentEncode(new TextEncoder().encode("a b!")) // 'a%20b%21'
 */
export function percentEncode(bytes: Uint8Array): string {
  let out = ''
  for (const byte of bytes) {
    out += isUnreserved(byte) ? String.fromCharCode(byte) : `%${HEX[byte >> 4]}${HEX[byte & 15]}`
  }
  return out
}

/**
 * Strict percent-decoding (RFC 3986 section 2.1): every `%` must start a `%XX` triplet; other
 * bytes pass through unchanged, and `+` stays `+` (it only means space in HTML forms).
 *
 * @example percentDecodeStrict(new TextEncoder().encode('a%20b+c')) // bytes of 'a b+c'
 * @throws {ToolError} `invalid_url_encoding` with details `{ offset }` (byte offset of the `%`)
 */
export function percentDecodeStrict(bytes: Uint8Array): Uint8Array {
  const out = new Uint8Array(bytes.length)
  let length = 0
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i] as number
    if (byte !== 0x25) {
      out[length++] = byte
      continue
    }
    const high = hexValue(bytes[i + 1])
    const low = hexValue(bytes[i + 2])
    if (high === -1 || low === -1) {
      throw new ToolError(
        'invalid_url_encoding',
        `"%" at offset ${i} is not followed by two hex digits`,
        { offset: i },
      )
    }
    out[length++] = (high << 4) | low
    i += 2
  }
  return out.slice(0, length)
}
