import { ToolError } from './types.js'

/**
 * `String.prototype.isWellFormed` exists in Node 20 (ES2024) but not in our ES2023 lib typings,
 * so we borrow it with an explicit type instead of widening the project's lib setting.
 */
const isWellFormed = (String.prototype as unknown as { isWellFormed(this: string): boolean })
  .isWellFormed

const fatalUtf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

/**
 * UTF-16 index of the first lone surrogate in `text`, or -1 when `text` is well-formed.
 *
 * @example firstLoneSurrogate('a\uD800b') // 1
 */
export function firstLoneSurrogate(text: string): number {
  if (isWellFormed.call(text)) return -1
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i)
    if (unit >= 0xd800 && unit <= 0xdbff) {
      const next = text.charCodeAt(i + 1)
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++
        continue
      }
      return i
    }
    if (unit >= 0xdc00 && unit <= 0xdfff) return i
  }
  return -1
}

/**
 * Rejects text that is not well-formed Unicode (a lone UTF-16 surrogate), which has no UTF-8
 * encoding: Node would silently turn it into U+FFFD and we would hash or encode other bytes
 * than the caller sent. The message names the field and offset, never the content, so it is
 * safe for secrets.
 *
 * @param field - request field name or JSON Pointer, e.g. "input" or "/value/a/0"
 * @throws {ToolError} `invalid_unicode` with details `{ field, offset }` (UTF-16 code unit index)
 */
export function assertWellFormed(text: string, field: string): void {
  const offset = firstLoneSurrogate(text)
  if (offset === -1) return
  throw new ToolError(
    'invalid_unicode',
    `${field} is not well-formed Unicode: lone surrogate at offset ${offset}`,
    { field, offset },
  )
}

/**
 * The shape check of a tool whose input is text fields only: each named field must be
 * well-formed Unicode ({@link assertWellFormed}).
 *
 * @example const checkHmac = wellFormedFields<HmacInput>('input', 'secret')
 * @throws {ToolError} `invalid_unicode` with `{ field, offset }` for the first bad field
 */
export function wellFormedFields<I>(...fields: (keyof I & string)[]): (input: I) => void {
  return (input) => {
    for (const field of fields) assertWellFormed(input[field] as string, field)
  }
}

/**
 * UTF-8 bytes of well-formed text.
 *
 * @example utf8Encode('é') // Uint8Array [0xc3, 0xa9]
 */
export function utf8Encode(text: string): Uint8Array {
  return Buffer.from(text, 'utf8')
}

/**
 * Strict UTF-8 decoding (WHATWG decoder with `fatal: true`): invalid sequences give `null`
 * instead of U+FFFD, and a leading BOM is kept as U+FEFF rather than dropped.
 *
 * @example utf8DecodeStrict(new Uint8Array([0xff])) // null
 */
export function utf8DecodeStrict(bytes: Uint8Array): string | null {
  try {
    return fatalUtf8.decode(bytes)
  } catch {
    return null
  }
}

/** Number of UTF-8 bytes of `text` (a lone surrogate counts as the 3 bytes of U+FFFD). */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8')
}
