import { createPrivateKey } from 'node:crypto'
import { generateJwt } from '@coinbase/cdp-sdk/auth'
import { type JWTPayload, SignJWT, UnsecuredJWT } from 'jose'
import { describe, expect, it } from 'vitest'
import { cdpKeySecret } from '../facilitators/auth.js'
import { createCdpApiKey } from './api-keys.js'
import { type DevFacilitatorAuth, refusal } from './facilitator-auth.js'

// The devnet facilitator's CDP check, on JWTs from CDP's own generateJwt and on forged ones.

const key = createCdpApiKey('ec')
const auth: DevFacilitatorAuth = { mode: 'cdp', keyId: key.id, publicKey: key.publicKey }
const request = { method: 'POST', host: '127.0.0.1:4021', path: '/platform/v2/x402/verify' }
const now = Math.floor(Date.now() / 1000)

/** A JWT signed with the key, with these claims and header fields over CDP's. */
function forge(claims: JWTPayload = {}, header: Record<string, unknown> = {}) {
  return new SignJWT({
    sub: key.id,
    iss: 'cdp',
    uris: [`POST ${request.host}${request.path}`],
    nbf: now,
    iat: now,
    exp: now + 120,
    ...claims,
  })
    .setProtectedHeader({ alg: 'ES256', kid: key.id, typ: 'JWT', nonce: 'n', ...header })
    .sign(createPrivateKey(key.secret))
}

const check = async (jwt: string | Promise<string>) =>
  refusal(auth, { ...request, authorization: `Bearer ${await jwt}` })

describe('the devnet facilitator checks a CDP JWT as CDP does', () => {
  it.each(['ec', 'ed25519'] as const)('accepts generateJwt’s JWT (%s key)', async (kind) => {
    const k = kind === 'ec' ? key : createCdpApiKey('ed25519')
    const jwt = await generateJwt({
      apiKeyId: k.id,
      apiKeySecret: cdpKeySecret(k.secret),
      requestMethod: request.method,
      requestHost: request.host,
      requestPath: request.path,
    })
    const authorization = `Bearer ${jwt}`
    const as = { mode: 'cdp' as const, keyId: k.id, publicKey: k.publicKey }
    expect(await refusal(as, { ...request, authorization })).toBe(undefined)
    expect(await refusal(as, { ...request, method: 'GET', authorization })).toMatch(/^uris /)
    expect(await refusal(as, { ...request, host: 'localhost:4021', authorization })).toMatch(
      /^uris /,
    )
  })

  it('refuses every departure, saying which', async () => {
    const cases: [string | undefined, string | RegExp][] = [
      [undefined, 'no Authorization: Bearer <JWT>'],
      ['Basic abc', 'no Authorization: Bearer <JWT>'],
      [`Bearer ${await forge()}x`, /^ERR_JWS_SIGNATURE_VERIFICATION_FAILED/],
      [`Bearer ${await forge({}, { kid: 'other' })}`, 'kid "other" is not the key id'],
      [
        `Bearer ${await forge({ sub: 'other' })}`,
        /^ERR_JWT_CLAIM_VALIDATION_FAILED: unexpected "sub"/,
      ],
      [
        `Bearer ${await forge({ iss: 'coinbase' })}`,
        /^ERR_JWT_CLAIM_VALIDATION_FAILED: unexpected "iss"/,
      ],
      [`Bearer ${await forge({ exp: now - 10 })}`, /^ERR_JWT_EXPIRED/],
      [`Bearer ${await forge({ nbf: now + 60 })}`, /^ERR_JWT_CLAIM_VALIDATION_FAILED: "nbf"/],
      [`Bearer ${await forge({ exp: now + 600 })}`, 'valid for 600 s, more than 120 s'],
      [`Bearer ${await forge({ uris: undefined })}`, /missing required "uris" claim/],
      [
        `Bearer ${await forge({ uris: [`POST ${request.host}${request.path}`, 'GET x/y'] })}`,
        /^uris /,
      ],
      // alg "none": no signature at all.
      [
        `Bearer ${new UnsecuredJWT({ sub: key.id, iss: 'cdp' }).setExpirationTime('2m').encode()}`,
        'no Authorization: Bearer <JWT>',
      ],
    ]
    for (const [authorization, expected] of cases) {
      const why = await refusal(auth, { ...request, authorization })
      if (typeof expected === 'string') expect(why, String(authorization)).toBe(expected)
      else expect(why, String(authorization)).toMatch(expected)
    }
    expect(await check(forge())).toBe(undefined)
  })
})
