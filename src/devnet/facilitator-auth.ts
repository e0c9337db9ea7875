import type { KeyObject } from 'node:crypto'
import { decodeProtectedHeader, errors, jwtVerify } from 'jose'

/**
 * An auth mode of the devnet facilitator: which API key it accepts, by the public half of the key
 * the service signs with. `cdp` checks as CDP's facilitator does; `payai` as PayAI's does.
 */
export interface DevFacilitatorAuth {
  mode: 'cdp' | 'payai'
  /** The API key id: the JWT's `kid` and `sub`. */
  keyId: string
  /** The public key: EC P-256 (ES256) or Ed25519 (EdDSA) for `cdp`, Ed25519 for `payai`. */
  publicKey: KeyObject
}

/** The request a JWT must be bound to (CDP): its method, `Host` header and path. */
export interface AuthRequest {
  method: string
  host: string
  path: string
  authorization: string | undefined
}

/** Longest validity CDP accepts, in seconds (`generateJwt` makes JWTs valid 120 s). */
const MAX_VALIDITY_S = 120

/**
 * Why a request's `Authorization` is refused, or undefined when it passes. For `cdp`, as CDP
 * checks its JWTs: `Bearer <JWT>`, signed by the configured key (ES256 for EC, EdDSA for
 * Ed25519), `kid` and `sub` equal to the key id, `iss` "cdp", `nbf` and `exp` around now and at
 * most 120 s apart, and `uris` exactly `["<METHOD> <host><path>"]` of this request. For `payai`,
 * as `@payai/facilitator` signs them: EdDSA, `kid` and `sub` the key id, `iss` "payai-merchant",
 * `exp` at most 120 s after `iat`. Dev and tests only.
 *
 * @example
 * await refusal(auth, { method: 'POST', host: '127.0.0.1:4021', path: '/verify', authorization })
 * // undefined, or e.g. 'uris ["POST 127.0.0.1:4021/settle"] is not ["POST 127.0.0.1:4021/verify"]'
 */
export async function refusal(
  auth: DevFacilitatorAuth,
  request: AuthRequest,
): Promise<string | undefined> {
  const match = /^Bearer ([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(
    request.authorization ?? '',
  )
  if (!match?.[1]) return 'no Authorization: Bearer <JWT>'
  const jwt = match[1]
  const cdp = auth.mode === 'cdp'
  const alg = auth.publicKey.asymmetricKeyType === 'ec' ? 'ES256' : 'EdDSA'
  try {
    const header = decodeProtectedHeader(jwt)
    if (header.kid !== auth.keyId) return `kid ${JSON.stringify(header.kid)} is not the key id`
    const { payload } = await jwtVerify(jwt, auth.publicKey, {
      algorithms: [alg],
      issuer: cdp ? 'cdp' : 'payai-merchant',
      subject: auth.keyId,
      requiredClaims: cdp ? ['exp', 'nbf', 'iat', 'uris'] : ['exp', 'iat'],
    })
    const from = (cdp ? payload.nbf : payload.iat) ?? 0
    if ((payload.exp ?? 0) - from > MAX_VALIDITY_S) {
      return `valid for ${(payload.exp ?? 0) - from} s, more than ${MAX_VALIDITY_S} s`
    }
    if (cdp) {
      const expected = [`${request.method} ${request.host}${request.path}`]
      if (JSON.stringify(payload.uris) !== JSON.stringify(expected)) {
        return `uris ${JSON.stringify(payload.uris)} is not ${JSON.stringify(expected)}`
      }
    }
    return undefined
  } catch (error) {
    if (error instanceof errors.JOSEError) return `${error.code}: ${error.message}`
    return 'malformed JWT'
  }
}
