import { describe, expect, it } from 'vitest'
import { fixedEnv, toolErrorOf } from '../../test/helpers/tools.js'
import { jwtInspect, jwtInspectInput } from './jwt-inspect.js'
import type { ToolEnv } from './types.js'

// RFC 7519 section 3.1 (HS256) and section 6.1 (unsecured) examples.
const RFC7519_JWS =
  'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
const RFC7519_UNSECURED =
  'eyJhbGciOiJub25lIn0.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.'
const EXP = 1300819380
const clock = (now: number): ToolEnv => ({ nowSeconds: () => now })
const claims = { iss: 'joe', exp: EXP, 'http://example.com/is_root': true }

function token(header: object, payload: object, signature = 'c2ln'): string {
  const enc = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url')
  return `${enc(header)}.${enc(payload)}.${signature}`
}

describe('jwtInspect', () => {
  it('decodes the RFC 7519 section 3.1 example before it expires', () => {
    expect(jwtInspect({ token: RFC7519_JWS }, clock(EXP - 100))).toEqual({
      type: 'JWS',
      header: { typ: 'JWT', alg: 'HS256' },
      claims,
      signature: { present: true, bytes: 32 },
      unsecured: false,
      timestamps: { exp: { value: EXP, iso: '2011-03-22T18:43:00.000Z' } },
      validity: { now: EXP - 100, status: 'valid', expires_in_seconds: 100 },
      warnings: [],
      signature_verified: false,
    })
  })

  it('decodes the RFC 7519 section 6.1 unsecured example with a warning', () => {
    const result = jwtInspect({ token: `Bearer ${RFC7519_UNSECURED}` }, fixedEnv)
    expect(result).toEqual({
      type: 'JWS',
      header: { alg: 'none' },
      claims,
      signature: { present: false, bytes: 0 },
      unsecured: true,
      timestamps: { exp: { value: EXP, iso: '2011-03-22T18:43:00.000Z' } },
      validity: { now: 1_700_000_000, status: 'expired', expires_in_seconds: EXP - 1_700_000_000 },
      warnings: [
        'alg is "none": the token is unsecured (RFC 7519 section 6) and anyone can forge it',
      ],
      signature_verified: false,
    })
  })

  it('uses the same boundaries as jose: exp == now is expired, nbf == now is valid', () => {
    const now = 1_000_000
    const at = (payload: object) =>
      jwtInspect({ token: token({ alg: 'HS256' }, payload) }, clock(now))
    expect(at({ exp: now }).validity).toEqual({ now, status: 'expired', expires_in_seconds: 0 })
    expect(at({ exp: now + 1 }).validity).toEqual({ now, status: 'valid', expires_in_seconds: 1 })
    expect(at({ nbf: now + 1, exp: now + 60 }).validity).toEqual({
      now,
      status: 'not_yet_valid',
      expires_in_seconds: 60,
    })
    expect(at({ nbf: now, exp: now + 60 }).validity.status).toBe('valid')
    expect(at({ nbf: now + 1 }).validity).toEqual({
      now,
      status: 'not_yet_valid',
      expires_in_seconds: null,
    })
    expect(at({ iat: now }).validity).toEqual({ now, status: 'no_exp', expires_in_seconds: null })
  })

  it('warns about non-numeric date claims and leaves them out', () => {
    const result = jwtInspect(
      { token: token({ alg: 'HS256' }, { iat: '2020-01-01', exp: 1.5e9, nbf: null }) },
      fixedEnv,
    )
    expect(result.timestamps).toEqual({ exp: { value: 1.5e9, iso: '2017-07-14T02:40:00.000Z' } })
    expect(result.warnings).toEqual([
      '"iat" is not a NumericDate (a number of seconds) and was ignored',
      '"nbf" is not a NumericDate (a number of seconds) and was ignored',
    ])
    expect(result.validity.status).toBe('expired')
  })

  it('shows only the protected header of a JWE', () => {
    // RFC 7516 appendix A.2 header {"alg":"RSA1_5","enc":"A128CBC-HS256"}; other segments shortened.
    const jwe = 'eyJhbGciOiJSU0ExXzUiLCJlbmMiOiJBMTI4Q0JDLUhTMjU2In0.a2V5.aXY.Y2lwaGVy.dGFn'
    expect(jwtInspect({ token: jwe }, fixedEnv)).toEqual({
      type: 'JWE',
      header: { alg: 'RSA1_5', enc: 'A128CBC-HS256' },
      claims: null,
      signature: { present: false, bytes: 0 },
      unsecured: false,
      timestamps: {},
      validity: { now: 1_700_000_000, status: 'no_exp', expires_in_seconds: null },
      warnings: ['JWE: the claims are encrypted, so only the protected header is shown'],
      signature_verified: false,
    })
  })

  it('rejects anything that is not a compact JWS or JWE', () => {
    const [h, p, s] = RFC7519_JWS.split('.') as [string, string, string]
    const bad = [
      [`${h}.${p}`, { segments: 2 }],
      [`${h}.${p}.${s}.x`, { segments: 4 }],
      [`${h}.${p}.${s}==`, { segment: 3, offset: 43 }],
      [`${h}.${p}+.${s}`, { segment: 2, offset: p.length }],
      [`.${p}.${s}`, { segment: 1 }],
      [`${h}..${s}`, { segment: 2 }],
      [`${h}.${p}.${s}AA`, { segment: 3 }],
      [`${s}.${p}.${s}`, { segment: 1 }],
    ] as const
    for (const [value, details] of bad) {
      const error = toolErrorOf(() => jwtInspect({ token: value }, fixedEnv))
      expect(error.code, value).toBe('invalid_jwt')
      expect(error.details, value).toMatchObject(details)
    }
    const notObject = `${h}.${Buffer.from('[1]').toString('base64url')}.${s}`
    expect(toolErrorOf(() => jwtInspect({ token: notObject }, fixedEnv)).details).toEqual({
      segment: 2,
    })
  })

  it('rejects lone surrogates and over-long tokens', () => {
    expect(toolErrorOf(() => jwtInspect({ token: 'a\uD800' }, fixedEnv)).code).toBe(
      'invalid_unicode',
    )
    expect(jwtInspectInput.safeParse({ token: 'a'.repeat(16 * 1024 + 65) }).success).toBe(false)
    const long = `bearer ${'a'.repeat(16 * 1024 + 1)}`
    expect(toolErrorOf(() => jwtInspect({ token: long }, fixedEnv)).message).toBe(
      'token is 16385 characters; the limit is 16384',
    )
  })

  // Found by fuzzing (test/tools.fuzz.test.ts): a claim of 1e400 became Infinity, which the JSON
  // response then showed as null.
  it('refuses header or claim numbers beyond the double range', () => {
    const b64 = (text: string) => Buffer.from(text).toString('base64url')
    const withClaims = `${b64('{"alg":"none"}')}.${b64('{"a":1e400}')}.`
    const error = toolErrorOf(() => jwtInspect({ token: withClaims }, fixedEnv))
    expect([error.code, error.details]).toEqual(['number_out_of_range', { field: '/claims/a' }])
    const withHeader = `${b64('{"alg":"none","x":[-1e999]}')}.${b64('{}')}.`
    expect(toolErrorOf(() => jwtInspect({ token: withHeader }, fixedEnv)).details).toEqual({
      field: '/header/x/0',
    })
  })
})
