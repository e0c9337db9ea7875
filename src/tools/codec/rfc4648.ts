import { ToolError } from '../types.js'
import { describeUnit, type OffsetUnit } from './describe.js'

/** Which RFC 4648 alphabet a Base64 text used: section 4 (`+/`) or section 5 (`-_`). */
export type Base64Alphabet = 'standard' | 'url'

/** Result of {@link decodeBase64Strict}. */
export interface DecodedBase64 {
  bytes: Uint8Array
  /** `url` when the text contains `-` or `_`; otherwise `standard` (both share the other 62). */
  alphabet: Base64Alphabet
  /** Whether the text ended in `=` padding. */
  padded: boolean
}

/** Why a Base64 text was rejected; also `details.reason` of the ToolError. */
export type Base64Problem =
  | 'invalid_character'
  | 'mixed_alphabet'
  | 'misplaced_padding'
  | 'bad_padding'
  | 'bad_length'

// Forgiving-base64 (WHATWG) strips exactly these: tab, LF, FF, CR, space.
const WHITESPACE = new Set([0x09, 0x0a, 0x0c, 0x0d, 0x20])

function isAlphanumeric(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) ||
    (code >= 0x61 && code <= 0x7a) ||
    (code >= 0x30 && code <= 0x39)
  )
}

function fail(problem: Base64Problem, message: string, offset: number): never {
  throw new ToolError('invalid_base64', message, { reason: problem, offset })
}

/**
 * Strict RFC 4648 Base64 decoding of either alphabet. Node's own decoder silently skips
 * characters it does not know and accepts mixed alphabets and stray padding, which would turn
 * garbage into plausible bytes, so we validate every character first and only then let Buffer
 * decode the cleaned text.
 *
 * Rules: ASCII whitespace is ignored; the text uses one alphabet (`+/` or `-_`, never both);
 * `=` appears only at the end, at most twice, and only to complete a 4-character group;
 * unpadded text may not have a length of 1 mod 4. Non-zero trailing bits are accepted
 * (RFC 4648 section 3.5 leaves that to the decoder).
 *
 * @example decodeBase64Strict('Zm9v') // { bytes: 'foo', alphabet: 'standard', padded: false }
 * @param unit - how `offset` is counted in errors (characters of request text, or bytes)
 * @throws {ToolError} `invalid_base64` with details `{ reason: Base64Problem, offset }`, offset
 *   counted in the original (unstripped) input
 */
export function decodeBase64Strict(text: string, unit: OffsetUnit = 'character'): DecodedBase64 {
  return decodeWellFormed(text) ?? decodeScanning(text, unit)
}

// One alphabet, no whitespace, padding only at the end: the common case, checked by the regex
// engine in native code instead of the character scan.
const STANDARD_TEXT = /^[A-Za-z0-9+/]*(={0,2})$/
const URL_TEXT = /^[A-Za-z0-9_-]*(={0,2})$/

/** The fast path: the decoded text if it is well formed as a whole, else undefined. */
function decodeWellFormed(text: string): DecodedBase64 | undefined {
  const standard = STANDARD_TEXT.exec(text)
  const match = standard ?? URL_TEXT.exec(text)
  if (!match) return undefined
  const padCount = match[1]?.length ?? 0
  const dataLength = text.length - padCount
  if (padCount > 0 && (dataLength + padCount) % 4 !== 0) return undefined
  if (dataLength % 4 === 1) return undefined
  // Text of the 62 shared characters matches both: it counts as standard, as in the scan.
  const alphabet: Base64Alphabet = standard ? 'standard' : 'url'
  return {
    bytes: Buffer.from(text, alphabet === 'url' ? 'base64url' : 'base64'),
    alphabet,
    padded: padCount > 0,
  }
}

/** The full scan: strips whitespace and names the first problem with its offset. */
function decodeScanning(text: string, unit: OffsetUnit): DecodedBase64 {
  let alphabet: Base64Alphabet | undefined
  let data = ''
  let dataLength = 0
  let lastDataOffset = -1
  let padOffset = -1
  let padCount = 0
  let runStart = 0
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    const isWhitespace = WHITESPACE.has(code)
    if (isWhitespace || code === 0x3d) {
      data += text.slice(runStart, i)
      runStart = i + 1
      if (code === 0x3d) {
        if (padOffset === -1) padOffset = i
        padCount++
      }
      continue
    }
    let charAlphabet: Base64Alphabet | undefined
    if (code === 0x2b || code === 0x2f) charAlphabet = 'standard'
    else if (code === 0x2d || code === 0x5f) charAlphabet = 'url'
    else if (!isAlphanumeric(code)) {
      fail('invalid_character', `invalid ${describeUnit(text, i, unit)} at offset ${i}`, i)
    }
    if (padOffset !== -1) {
      fail(
        'misplaced_padding',
        `padding "=" at offset ${padOffset} is followed by data at offset ${i}`,
        padOffset,
      )
    }
    if (charAlphabet) {
      if (alphabet && alphabet !== charAlphabet) {
        fail(
          'mixed_alphabet',
          `${describeUnit(text, i, unit)} at offset ${i} mixes the URL-safe and standard Base64 alphabets`,
          i,
        )
      }
      alphabet = charAlphabet
    }
    dataLength++
    lastDataOffset = i
  }
  data += text.slice(runStart)
  if (padCount > 0 && (padCount > 2 || (dataLength + padCount) % 4 !== 0)) {
    fail(
      'bad_padding',
      `${padCount} padding character(s) cannot complete a group of ${dataLength % 4} character(s) (offset ${padOffset})`,
      padOffset,
    )
  }
  if (dataLength % 4 === 1) {
    fail(
      'bad_length',
      `${dataLength} Base64 characters: a final group of 1 character cannot encode a byte (offset ${lastDataOffset})`,
      lastDataOffset,
    )
  }
  const resolved = alphabet ?? 'standard'
  return {
    bytes: Buffer.from(data, resolved === 'url' ? 'base64url' : 'base64'),
    alphabet: resolved,
    padded: padCount > 0,
  }
}

/**
 * Standard Base64 with padding (RFC 4648 section 4).
 *
 * @example encodeBase64(new TextEncoder().encode('fo')) // 'Zm8='
 */
export function encodeBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
}

/**
 * URL-safe Base64 without padding (RFC 4648 section 5).
 *
 * @example encodeBase64Url(new TextEncoder().encode('fo')) // 'Zm8'
 */
export function encodeBase64Url(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64url')
}

const HEX_DIGIT = /^[0-9a-fA-F]$/

/**
 * Lowercase hexadecimal (RFC 4648 section 8, in lowercase).
 *
 * @example encodeHex(new Uint8Array([0xde, 0xad])) // 'dead'
 */
export function encodeHex(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('hex')
}

/**
 * Strict hexadecimal decoding: digits of either case only, no whitespace, no `0x` prefix, an even
 * count. Node's `Buffer.from(text, 'hex')` stops silently at the first bad digit, hence the check.
 *
 * @example decodeHexStrict('DEad') // Uint8Array [0xde, 0xad]
 * @throws {ToolError} `invalid_hex` with details `{ reason: 'invalid_character' | 'odd_length', offset }`
 */
export function decodeHexStrict(text: string, unit: OffsetUnit = 'character'): Uint8Array {
  for (let i = 0; i < text.length; i++) {
    if (!HEX_DIGIT.test(text.charAt(i))) {
      throw new ToolError('invalid_hex', `invalid ${describeUnit(text, i, unit)} at offset ${i}`, {
        reason: 'invalid_character',
        offset: i,
      })
    }
  }
  if (text.length % 2 === 1) {
    const offset = text.length - 1
    throw new ToolError(
      'invalid_hex',
      `odd number of hex digits (${text.length}): the digit at offset ${offset} has no pair`,
      { reason: 'odd_length', offset },
    )
  }
  return Buffer.from(text, 'hex')
}
