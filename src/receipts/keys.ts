import {
  createHash,
  createPrivateKey,
  createPublicKey,
  generateKeyPairSync,
  type JsonWebKey,
  type KeyObject,
} from 'node:crypto'
import { linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** File under the data directory that keeps the generated development signing key (PKCS#8 PEM). */
export const KEY_FILE_NAME = 'receipt-signing-key'

/**
 * A public Ed25519 key as the JWKS publishes it (RFC 8037 `OKP` key, RFC 7517 members), with its
 * `kid`: the RFC 7638 thumbprint of the key.
 */
export interface PublicJwk {
  kty: 'OKP'
  crv: 'Ed25519'
  /** The 32-byte public key, base64url (RFC 8037 section 2). */
  x: string
  /** RFC 7638 SHA-256 thumbprint, base64url (43 characters). */
  kid: string
  alg: 'EdDSA'
  use: 'sig'
}

/** The key receipts are signed with: the private key and its public JWK (with `kid`). */
export interface SigningKey {
  privateKey: KeyObject
  publicJwk: PublicJwk
}

/** Where the signing key came from: `RECEIPT_SIGNING_KEY`, or the generated development file. */
export type KeySource = 'configured' | 'generated'

/**
 * The RFC 7638 JWK thumbprint (SHA-256, base64url) of an Ed25519 public key: the hash of the JSON
 * of its required members `crv`, `kty`, `x`, in that (lexicographic) order, without whitespace.
 *
 * Why not jose's `calculateJwkThumbprint`: it is async (WebCrypto digest) and the service is
 * assembled synchronously (`createService`); the test checks both give the same value.
 *
 * @example jwkThumbprint({ kty: 'OKP', crv: 'Ed25519', x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo' })
 * // 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k' (RFC 8037 appendix A.3)
 */
export function jwkThumbprint(jwk: { crv: string; kty: string; x: string }): string {
  const members = JSON.stringify({ crv: jwk.crv, kty: jwk.kty, x: jwk.x })
  return createHash('sha256').update(members).digest('base64url')
}

/** The published form of an Ed25519 public key object. */
function publicJwkOf(key: KeyObject): PublicJwk {
  const publicKey = key.type === 'public' ? key : createPublicKey(key)
  const { x } = publicKey.export({ format: 'jwk' }) as { x: string }
  const members = { kty: 'OKP', crv: 'Ed25519', x } as const
  return { ...members, kid: jwkThumbprint(members), alg: 'EdDSA', use: 'sig' }
}

/** Environment values often carry a PEM's newlines as the two characters `\n`. */
const unescapeNewlines = (text: string) => text.trim().replaceAll('\\n', '\n')

function assertEd25519(key: KeyObject, name: string): void {
  if (key.asymmetricKeyType !== 'ed25519') {
    throw new Error(`${name} must be an Ed25519 key, not ${key.asymmetricKeyType ?? 'unknown'}`)
  }
}

/**
 * Reads an Ed25519 private key given as a JWK (JSON with `kty: "OKP"`, `crv: "Ed25519"`, `d` and
 * `x`, RFC 8037) or as a PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`, RFC 5958; `\n` escapes are
 * read as newlines).
 *
 * @example parseSigningKey(readFileSync('./data/receipt-signing-key', 'utf8')).publicJwk.kid
 * @param name - the variable it came from, for the error message
 * @throws {Error} when the text is neither, or holds another kind of key
 */
export function parseSigningKey(text: string, name = 'RECEIPT_SIGNING_KEY'): SigningKey {
  const source = unescapeNewlines(text)
  let privateKey: KeyObject
  try {
    privateKey = source.startsWith('{')
      ? createPrivateKey({ key: JSON.parse(source) as JsonWebKey, format: 'jwk' })
      : createPrivateKey(source)
  } catch (error) {
    throw new Error(
      `${name} must be an Ed25519 private key as a JWK or a PKCS#8 PEM: ${(error as Error).message}`,
    )
  }
  assertEd25519(privateKey, name)
  return { privateKey, publicJwk: publicJwkOf(privateKey) }
}

const PUBLIC_PEM = /-----BEGIN PUBLIC KEY-----[\s\S]+?-----END PUBLIC KEY-----/g

/**
 * Reads the public keys of retired signing keys, so that the receipts they signed keep verifying:
 * a JSON array of public JWKs, a JWKS (`{"keys": […]}`), or one or more SPKI PEM blocks
 * (`-----BEGIN PUBLIC KEY-----`). A given `kid` is ignored: the thumbprint is the `kid`.
 *
 * @example parseRetiredKeys('[{"kty":"OKP","crv":"Ed25519","x":"11qY…URo"}]')[0].kid // 'kPrK_qmx…S4k'
 * @throws {Error} on a private key (keep only the public part of a retired key), a key that is
 *   not Ed25519, or text that is none of these forms
 */
export function parseRetiredKeys(text: string, name = 'RECEIPT_RETIRED_KEYS'): PublicJwk[] {
  const source = unescapeNewlines(text)
  if (source === '') return []
  let keys: KeyObject[]
  if (source.startsWith('{') || source.startsWith('[')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(source)
    } catch (error) {
      throw new Error(`${name} is not valid JSON: ${(error as Error).message}`)
    }
    const list = Array.isArray(parsed) ? parsed : (parsed as { keys?: unknown }).keys
    if (!Array.isArray(list)) throw new Error(`${name} must be a JSON array of JWKs or a JWKS`)
    keys = list.map((jwk, i) => {
      if (typeof jwk !== 'object' || jwk === null) throw new Error(`${name}[${i}] is not a JWK`)
      if ('d' in jwk) {
        throw new Error(`${name}[${i}] is a private key: give only its public part (no "d")`)
      }
      try {
        return createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' })
      } catch (error) {
        throw new Error(`${name}[${i}] is not a public JWK: ${(error as Error).message}`)
      }
    })
  } else {
    if (source.includes('PRIVATE KEY')) {
      throw new Error(`${name} holds a private key: give only the public keys (SPKI PEM or JWK)`)
    }
    const blocks = source.match(PUBLIC_PEM) ?? []
    if (blocks.length === 0) {
      throw new Error(`${name} must be public JWKs (JSON) or "-----BEGIN PUBLIC KEY-----" PEMs`)
    }
    keys = blocks.map((pem) => createPublicKey(pem))
  }
  const seen = new Set<string>()
  return keys
    .map((key, i) => {
      assertEd25519(key, `${name}[${i}]`)
      return publicJwkOf(key)
    })
    .filter((jwk) => !seen.has(jwk.kid) && seen.add(jwk.kid))
}

/**
 * Resolves the signing key. A configured key (`RECEIPT_SIGNING_KEY`) wins; otherwise a development
 * key is generated once into `<dataDir>/receipt-signing-key` (PKCS#8 PEM, mode 0600) and reused on
 * later starts, beside the telemetry salt. Production must set `RECEIPT_SIGNING_KEY`, the same on
 * every instance, or a receipt signed by one instance does not verify against another's JWKS.
 *
 * The file's text is a valid `RECEIPT_SIGNING_KEY`, so copying it into the variable keeps the key.
 * Synchronous (read once at start): the service is assembled without awaiting I/O.
 *
 * @example resolveSigningKey(process.env.RECEIPT_SIGNING_KEY, './data') // { key, source: 'generated' }
 * @throws {Error} when the configured key or the file cannot be read as an Ed25519 private key,
 *   or the file cannot be written
 */
export function resolveSigningKey(
  configured: string | undefined,
  dataDir: string,
): { key: SigningKey; source: KeySource } {
  if (configured) return { key: parseSigningKey(configured), source: 'configured' }
  const path = join(dataDir, KEY_FILE_NAME)
  mkdirSync(dataDir, { recursive: true })
  const { privateKey } = generateKeyPairSync('ed25519')
  const pem = privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
  // Written whole under a temporary name, then linked into place: link() fails when the file
  // exists, so of two processes starting together one key wins and neither reads a half-written
  // file.
  const temporary = `${path}.${process.pid}.${Date.now()}.tmp`
  writeFileSync(temporary, pem, { mode: 0o600 })
  try {
    linkSync(temporary, path)
    return { key: { privateKey, publicJwk: publicJwkOf(privateKey) }, source: 'generated' }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  } finally {
    unlinkSync(temporary)
  }
  const stored = readFileSync(path, 'utf8')
  try {
    return { key: parseSigningKey(stored, path), source: 'generated' }
  } catch (error) {
    throw new Error(`${(error as Error).message}; delete ${path} or set RECEIPT_SIGNING_KEY`)
  }
}
