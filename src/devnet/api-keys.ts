import { generateKeyPairSync, type KeyObject, randomUUID } from 'node:crypto'

/** A facilitator API key made for a test, in the shape its portal issues, with its public half. */
export interface DevApiKey {
  /** The key id (`kid`, `sub`). */
  id: string
  /** The secret as the portal shows it: what CDP_API_KEY_SECRET or PAYAI_API_KEY_SECRET hold. */
  secret: string
  /** The public key the devnet facilitator checks JWTs with. */
  publicKey: KeyObject
}

/**
 * A CDP API key, freshly generated: `ec` as CDP's ECDSA key files hold it (`organizations/…/apiKeys/…`
 * id, SEC1 PEM "EC PRIVATE KEY" on P-256), `ed25519` as CDP's default secret keys (a UUID id, 64
 * bytes of seed then public key in base64). Dev and tests only.
 *
 * @example
 * const key = createCdpApiKey('ed25519')
 * startDevStack({ facilitators: [{ auth: { mode: 'cdp', keyId: key.id, publicKey: key.publicKey } }] })
 */
export function createCdpApiKey(kind: 'ec' | 'ed25519'): DevApiKey {
  if (kind === 'ec') {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    return {
      id: `organizations/${randomUUID()}/apiKeys/${randomUUID()}`,
      secret: privateKey.export({ type: 'sec1', format: 'pem' }).toString(),
      publicKey,
    }
  }
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const jwk = privateKey.export({ format: 'jwk' })
  const raw = Buffer.concat([
    Buffer.from(jwk.d as string, 'base64url'),
    Buffer.from(jwk.x as string, 'base64url'),
  ])
  return { id: randomUUID(), secret: raw.toString('base64'), publicKey }
}

/**
 * A PayAI API key, freshly generated: an Ed25519 key as PKCS#8 DER in base64, prefixed
 * `payai_sk_` as PayAI's merchant portal shows it. Dev and tests only.
 */
export function createPayaiApiKey(): DevApiKey {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519')
  const der = privateKey.export({ type: 'pkcs8', format: 'der' })
  return { id: randomUUID(), secret: `payai_sk_${der.toString('base64')}`, publicKey }
}
