// Test-only (excluded from the build): payloads for the payload-inspect fuzzers.
import fc from 'fast-check'
import { bytes, jsonValue, text } from './common.js'

/** Text that looks like each payload type, or almost. */
const payload = fc.oneof(
  text,
  jsonValue.map((v) => JSON.stringify(v)),
  jsonValue.map((v) => ` ${JSON.stringify(v, null, 2)}\n`),
  bytes.map((b) => Buffer.from(b).toString('hex')),
  bytes.map((b) => Buffer.from(b).toString('hex').toUpperCase()),
  bytes.map((b) => Buffer.from(b).toString('base64')),
  bytes.map((b) => Buffer.from(b).toString('base64url')),
  text.map((t) => encodeURIComponent(t)),
  fc.tuple(text, text).map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}&x=%zz`),
  fc
    .tuple(jsonValue, jsonValue, bytes)
    .map(([h, c, s]) =>
      [JSON.stringify(h), JSON.stringify(c), s]
        .map((p) => Buffer.from(p).toString('base64url'))
        .join('.'),
    ),
  fc.constantFrom(
    '{',
    '{"a":',
    '[1,2',
    'deadbeef',
    'Zm9v',
    'a%2',
    '%%',
    'eyJhbGciOiJub25lIn0..',
    '\u0000\u0001',
  ),
)

/** Valid request bodies of POST /payload-inspect. */
export const validInputs = payload.map((input) => ({ input }))
