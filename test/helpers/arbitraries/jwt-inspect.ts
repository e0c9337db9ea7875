// Test-only (excluded from the build): JWTs for the jwt-inspect fuzzers.
import fc from 'fast-check'
import { bytes, jsonValue, text } from './common.js'

const b64url = (data: string | Uint8Array) => Buffer.from(data).toString('base64url')

/** NumericDates around the fuzzers' fixed clock (1,700,000,000), plus odd ones. */
const numericDate = fc.oneof(
  fc.integer({ min: 1_699_999_000, max: 1_700_001_000 }),
  fc.constantFrom(0, -1, 1.5, 8.64e12, 8.64e12 + 1, -8.64e12 - 1, 1e300, 2 ** 53 + 2),
  fc.constantFrom('1700000000', null, true, [1], {}),
)

const header = fc.record(
  {
    alg: fc.oneof(
      fc.constantFrom('HS256', 'RS256', 'ES256', 'none', 'None', 'NONE', 'dir'),
      jsonValue,
    ),
    typ: fc.constantFrom('JWT', 'at+jwt', 'JOSE'),
    kid: text,
    enc: fc.constantFrom('A256GCM', 'A128CBC-HS256'),
  },
  { requiredKeys: [] },
)

const claims = fc.record(
  {
    sub: text,
    iss: text,
    aud: fc.oneof(text, fc.array(text, { maxLength: 3 })),
    iat: numericDate,
    nbf: numericDate,
    exp: numericDate,
    extra: jsonValue,
  },
  { requiredKeys: [] },
)

/**
 * Compact JWS (3 segments, signature empty or random bytes) and JWE (5 segments), optionally
 * behind "Bearer " in any case, sometimes with a segment that is not JSON or not an object.
 */
const token = fc
  .tuple(
    header,
    fc.oneof({ arbitrary: claims, weight: 4 }, { arbitrary: jsonValue, weight: 1 }),
    fc.oneof(fc.constant(new Uint8Array()), bytes),
    fc.constantFrom('jws', 'jws', 'jws', 'jwe'),
    fc.constantFrom('', 'Bearer ', 'bearer  ', 'BEARER\t', ' '),
    fc.oneof(
      { arbitrary: fc.constant(undefined), weight: 5 },
      {
        arbitrary: fc.constantFrom('not json', '', '[1]', '"s"', '{"a":1e400}', '{"exp":1e400}'),
        weight: 1,
      },
    ),
  )
  .map(([h, c, signature, kind, prefix, broken]) => {
    const payload = broken === undefined ? JSON.stringify(c) : broken
    const compact =
      kind === 'jwe'
        ? [
            b64url(JSON.stringify(h)),
            b64url('key'),
            b64url('iv'),
            b64url('ciphertext'),
            b64url('tag'),
          ]
        : [b64url(JSON.stringify(h)), b64url(payload), b64url(signature)]
    return `${prefix}${compact.join('.')}`
  })

/** Valid request bodies of POST /jwt-inspect. */
export const validInputs = token.map((t) => ({ token: t }))
