// Fast-check generators shared by the tools' generators in this folder.
import fc from 'fast-check'

/** Well-formed text of every kind of character (no lone surrogates), short. */
export const text: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.string({ unit: 'grapheme', maxLength: 16 }),
  fc.string({ unit: 'binary', maxLength: 16 }),
  fc.string({ unit: 'binary-ascii', maxLength: 24 }),
  fc.constantFrom('', 'abc', 'hello world', '\u{1F600}', 'e\u0301', '\uFEFFbom', '\r\n\t\u0000'),
)

/** Random bytes, a few hundred at most. */
export const bytes: fc.Arbitrary<Uint8Array> = fc.uint8Array({ maxLength: 96 })

/** Bytes as the UTF-8 text they are, when they are (used for decode round trips). */
export const utf8Bytes: fc.Arbitrary<Uint8Array> = text.map((t) => new Uint8Array(Buffer.from(t)))

/** A small JSON value without lone surrogates: objects, arrays and scalars of every JSON type. */
export const jsonValue: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 })
