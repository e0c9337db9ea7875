/**
 * How offsets in a decoder's input are counted: `character` for request text (UTF-16 code unit
 * index), `byte` for pipeline intermediates (byte index; the bytes are handed over as a latin1
 * string so that one char is one byte).
 */
export type OffsetUnit = 'character' | 'byte'

/**
 * Names the unit at `offset` for an error message without echoing more than that one unit.
 *
 * @example describeUnit('a€', 1, 'character') // 'character "€" (U+20AC)'
 * @example describeUnit('\xc3', 0, 'byte') // 'byte 0xC3'
 */
export function describeUnit(text: string, offset: number, unit: OffsetUnit): string {
  if (unit === 'byte') {
    return `byte 0x${text.charCodeAt(offset).toString(16).toUpperCase().padStart(2, '0')}`
  }
  const codePoint = text.codePointAt(offset) ?? 0
  const char = String.fromCodePoint(codePoint)
  const hex = codePoint.toString(16).toUpperCase().padStart(4, '0')
  return `character ${JSON.stringify(char)} (U+${hex})`
}
