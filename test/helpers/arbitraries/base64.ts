// Test-only (excluded from the build): valid base64 requests for the fuzzers.
import fc from 'fast-check'
import { bytes, text, utf8Bytes } from './common.js'

/** Base64 of some bytes in either alphabet, padded or not, maybe with ASCII whitespace or a flaw. */
const base64Text = fc
  .tuple(
    fc.oneof(bytes, utf8Bytes),
    fc.constantFrom('base64', 'base64url'),
    fc.boolean(),
    fc.array(fc.tuple(fc.nat(), fc.constantFrom(' ', '\n', '\r\n', '\t', '\f')), { maxLength: 3 }),
    fc.option(fc.tuple(fc.nat(), fc.constantFrom('=', '*', '-', '+', '_', 'A', '==')), { freq: 4 }),
  )
  .map(([data, alphabet, padded, spaces, flaw]) => {
    let out = Buffer.from(data).toString(alphabet as BufferEncoding)
    out = padded ? out.padEnd(Math.ceil(out.length / 4) * 4, '=') : out.replace(/=+$/, '')
    for (const [at, space] of spaces) {
      const i = at % (out.length + 1)
      out = out.slice(0, i) + space + out.slice(i)
    }
    if (flaw) {
      const i = flaw[0] % (out.length + 1)
      out = out.slice(0, i) + flaw[1] + out.slice(i)
    }
    return out
  })

/** Valid request bodies of POST /base64: encode any text, decode Base64 (mostly well-formed). */
export const validInputs = fc.oneof(
  fc.record({ mode: fc.constant('encode'), input: text }, { requiredKeys: ['mode'] }),
  fc.record(
    { mode: fc.constant('decode'), input: fc.oneof(base64Text, text) },
    { requiredKeys: ['mode'] },
  ),
)
