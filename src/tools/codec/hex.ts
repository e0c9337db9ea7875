import { ToolError } from '../types.js'
import { describeUnit, type OffsetUnit } from './describe.js'

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
