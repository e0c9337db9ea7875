import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { createPayAIAuthHeaders } from '@payai/facilitator'
import type { FacilitatorConfig } from '@x402/core/server'
import type { FacilitatorAuthMode } from './types.js'

/** An API key pair as a facilitator's portal issues it. Never logged. */
export interface ApiKey {
  id: string
  secret: string
}

/** The API keys of the auth modes that need one (only those FACILITATOR_AUTH names). */
export interface FacilitatorCredentials {
  /** CDP_API_KEY_ID, CDP_API_KEY_SECRET */
  cdp?: ApiKey | undefined
  /** PAYAI_API_KEY_ID, PAYAI_API_KEY_SECRET */
  payai?: ApiKey | undefined
}

/** The facilitator endpoints a resource server calls, each with its HTTP method. */
export const ENDPOINT_METHODS = { verify: 'POST', settle: 'POST', supported: 'GET' } as const
export type Endpoint = keyof typeof ENDPOINT_METHODS

/** Authorization headers of one facilitator request. */
export type HeadersFor = (endpoint: Endpoint) => Promise<Record<string, string>>

/** How one facilitator authenticates: the SDK's `createAuthHeaders`, and the same per endpoint. */
export interface FacilitatorAuth {
  mode: FacilitatorAuthMode
  /** `FacilitatorConfig.createAuthHeaders`: headers keyed by endpoint, as the SDK asks. */
  createAuthHeaders?: NonNullable<FacilitatorConfig['createAuthHeaders']>
  /** The headers of one endpoint only (a CDP JWT is bound to one method and path). */
  headersFor?: HeadersFor
}

// PKCS#8 prefix of a raw 32-byte Ed25519 seed (RFC 8410).
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex')
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/

/**
 * Reads a CDP API key secret as CDP issues it and returns it in the form `generateJwt` takes:
 * - an EC P-256 key in PEM: PKCS#8 (`BEGIN PRIVATE KEY`) as is, or SEC1 (`BEGIN EC PRIVATE KEY`,
 *   the form of CDP's ECDSA key files) converted to PKCS#8, which is the only PEM `generateJwt`
 *   reads (jose's `importPKCS8`);
 * - an Ed25519 key in base64: 64 bytes, the seed then the public key (checked to match).
 * A PEM pasted into one env line with literal `\n` is accepted.
 *
 * @throws {Error} naming what is wrong, never quoting the secret
 * @example
 * cdpKeySecret('-----BEGIN EC PRIVATE KEY-----\n…') // '-----BEGIN PRIVATE KEY-----\n…'
 */
export function cdpKeySecret(secret: string): string {
  const text = secret.trim().replaceAll('\\n', '\n')
  if (text.startsWith('-----BEGIN')) {
    let key: KeyObject
    try {
      key = createPrivateKey(text)
    } catch {
      throw new Error('CDP_API_KEY_SECRET holds a PEM block that is not a readable private key')
    }
    if (key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1') {
      throw new Error(
        `CDP_API_KEY_SECRET is a ${key.asymmetricKeyType} key; CDP keys are EC P-256 (PEM) or Ed25519 (base64)`,
      )
    }
    return key.export({ type: 'pkcs8', format: 'pem' }).toString()
  }
  const raw = BASE64.test(text) ? Buffer.from(text, 'base64') : Buffer.alloc(0)
  if (raw.length !== 64) {
    throw new Error(
      'CDP_API_KEY_SECRET is neither an EC private key in PEM nor a base64 Ed25519 key (64 bytes: seed, then public key)',
    )
  }
  const derived = createPublicKey(
    createPrivateKey({
      key: Buffer.concat([ED25519_PKCS8_PREFIX, raw.subarray(0, 32)]),
      format: 'der',
      type: 'pkcs8',
    }),
  ).export({ format: 'jwk' }).x
  if (derived !== raw.subarray(32).toString('base64url')) {
    throw new Error(
      'CDP_API_KEY_SECRET is not an Ed25519 key: its public half does not match its seed',
    )
  }
  return text
}

/**
 * Reads a PayAI API key secret: an Ed25519 private key, PKCS#8 DER in base64, optionally prefixed
 * `payai_sk_` as PayAI's merchant portal shows it (what `@payai/facilitator` signs with).
 *
 * @throws {Error} naming what is wrong, never quoting the secret
 */
export function payaiKeySecret(secret: string): string {
  const text = secret.trim()
  const body = text.startsWith('payai_sk_') ? text.slice('payai_sk_'.length) : text
  let key: KeyObject | undefined
  try {
    if (BASE64.test(body)) {
      key = createPrivateKey({ key: Buffer.from(body, 'base64'), format: 'der', type: 'pkcs8' })
    }
  } catch {
    key = undefined
  }
  if (key?.asymmetricKeyType !== 'ed25519') {
    throw new Error(
      'PAYAI_API_KEY_SECRET is not a base64 PKCS#8 Ed25519 private key (optionally prefixed payai_sk_)',
    )
  }
  return text
}

type GenerateJwt = typeof import('@coinbase/cdp-sdk/auth')['generateJwt']
let cdpAuthModule: Promise<GenerateJwt> | undefined
/** `generateJwt`, loaded on first use: the CDP SDK takes about half a second to import. */
function loadGenerateJwt(): Promise<GenerateJwt> {
  cdpAuthModule ??= import('@coinbase/cdp-sdk/auth').then((m) => m.generateJwt)
  return cdpAuthModule
}

/**
 * CDP's auth for the facilitator at `url`: every request carries `Authorization: Bearer <JWT>`,
 * a JWT made by `generateJwt` (`@coinbase/cdp-sdk/auth`) for that request's method and for the
 * host and path of `url` plus the endpoint (`uris: ["POST api.cdp.coinbase.com/platform/v2/x402/verify"]`),
 * valid 120 s, ES256 or EdDSA after the key. The same as `createCdpFacilitatorClient` of
 * `@coinbase/cdp-sdk/x402`, which we cannot use as is: it builds its own client without a
 * timeout (the SDK's default is 90 s, beyond a payment's validity).
 *
 * @param url - the facilitator's base URL, e.g. `https://api.cdp.coinbase.com/platform/v2/x402`
 * @param key - CDP_API_KEY_ID and CDP_API_KEY_SECRET (checked with {@link cdpKeySecret})
 * @throws {Error} when the secret is not a CDP key
 */
export function cdpAuth(url: string, key: ApiKey): FacilitatorAuth {
  const apiKeySecret = cdpKeySecret(key.secret)
  const { host, pathname } = new URL(url)
  const base = pathname.replace(/\/+$/, '')
  const headersFor: HeadersFor = async (endpoint) => {
    const generateJwt = await loadGenerateJwt()
    const jwt = await generateJwt({
      apiKeyId: key.id,
      apiKeySecret,
      requestMethod: ENDPOINT_METHODS[endpoint],
      requestHost: host,
      requestPath: `${base}/${endpoint}`,
    })
    return { Authorization: `Bearer ${jwt}` }
  }
  return {
    mode: 'cdp',
    headersFor,
    async createAuthHeaders() {
      const [verify, settle, supported] = await Promise.all([
        headersFor('verify'),
        headersFor('settle'),
        headersFor('supported'),
      ])
      return { verify, settle, supported }
    },
  }
}

/**
 * PayAI's auth (`createPayAIAuthHeaders` of `@payai/facilitator`): `Authorization: Bearer <JWT>`
 * on verify, settle and supported alike, an EdDSA JWT with `kid` and `sub` the key id and `iss`
 * "payai-merchant", valid 120 s and reused by that package until 30 s before it expires. Unlike
 * CDP's, it is not bound to a method or path.
 *
 * @throws {Error} when the secret is not a PayAI key
 */
export function payaiAuth(key: ApiKey): FacilitatorAuth {
  const createAuthHeaders = createPayAIAuthHeaders(key.id, payaiKeySecret(key.secret))
  return {
    mode: 'payai',
    createAuthHeaders,
    headersFor: async (endpoint) => (await createAuthHeaders())[endpoint],
  }
}

/**
 * The auth of one facilitator from its mode and the configured keys.
 *
 * @throws {Error} when the mode needs a key that is missing or malformed (the service refuses to
 *   start: `@coinbase/x402` would silently send no auth instead)
 */
export function facilitatorAuth(
  mode: FacilitatorAuthMode,
  url: string,
  credentials: FacilitatorCredentials,
): FacilitatorAuth {
  if (mode === 'none') return { mode }
  const key = credentials[mode]
  if (!key) {
    const prefix = mode === 'cdp' ? 'CDP' : 'PAYAI'
    throw new Error(
      `FACILITATOR_AUTH is ${mode} for ${new URL(url).host} but ${prefix}_API_KEY_ID and ${prefix}_API_KEY_SECRET are not both set`,
    )
  }
  return mode === 'cdp' ? cdpAuth(url, key) : payaiAuth(key)
}
