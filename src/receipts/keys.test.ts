import { createPublicKey, generateKeyPairSync } from 'node:crypto'
import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { calculateJwkThumbprint } from 'jose'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import {
  jwkThumbprint,
  KEY_FILE_NAME,
  parseRetiredKeys,
  parseSigningKey,
  resolveSigningKey,
} from './keys.js'

// RFC 8037 appendix A.1 (the Ed25519 key) and A.3 (its RFC 7638 thumbprint).
const RFC8037 = {
  d: 'nWGxne_9WmC6hEr0kuwsxERJxWl7MmkZcDusAxyuf2A',
  x: '11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo',
  thumbprint: 'kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k',
}
const rfcJwk = { kty: 'OKP', crv: 'Ed25519', d: RFC8037.d, x: RFC8037.x }
const rfcPublic = { kty: 'OKP', crv: 'Ed25519', x: RFC8037.x }

const freshKey = () => generateKeyPairSync('ed25519').privateKey
const pemOf = (key = freshKey()) => key.export({ type: 'pkcs8', format: 'pem' }) as string
const publicPemOf = (key = freshKey()) =>
  createPublicKey(key).export({ type: 'spki', format: 'pem' }) as string

describe('jwkThumbprint', () => {
  it('gives the RFC 8037 A.3 thumbprint', () => {
    expect(jwkThumbprint(rfcPublic)).toBe(RFC8037.thumbprint)
  })

  it("agrees with jose's calculateJwkThumbprint on any key", async () => {
    for (let i = 0; i < 5; i++) {
      const jwk = createPublicKey(freshKey()).export({ format: 'jwk' }) as typeof rfcPublic
      expect(jwkThumbprint(jwk)).toBe(await calculateJwkThumbprint(jwk))
    }
  })
})

describe('parseSigningKey', () => {
  it('reads a private JWK: public JWK with the thumbprint as kid', () => {
    expect(parseSigningKey(JSON.stringify(rfcJwk)).publicJwk).toEqual({
      ...rfcPublic,
      kid: RFC8037.thumbprint,
      alg: 'EdDSA',
      use: 'sig',
    })
  })

  it('reads a PKCS#8 PEM, with real or escaped newlines, to the same key', () => {
    const key = freshKey()
    const pem = pemOf(key)
    const kid = jwkThumbprint(createPublicKey(key).export({ format: 'jwk' }) as typeof rfcPublic)
    expect(parseSigningKey(pem).publicJwk.kid).toBe(kid)
    expect(parseSigningKey(pem.replaceAll('\n', '\\n')).publicJwk.kid).toBe(kid)
  })

  it('refuses another key type, a public key and garbage, naming the variable', () => {
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
    expect(() => parseSigningKey(pemOf(p256))).toThrow(
      'RECEIPT_SIGNING_KEY must be an Ed25519 key, not ec',
    )
    expect(() => parseSigningKey(JSON.stringify(rfcPublic))).toThrow(
      /^RECEIPT_SIGNING_KEY must be an Ed25519 private key as a JWK or a PKCS#8 PEM: /,
    )
    expect(() => parseSigningKey('not a key')).toThrow(
      /^RECEIPT_SIGNING_KEY must be an Ed25519 private key as a JWK or a PKCS#8 PEM: /,
    )
  })
})

describe('parseRetiredKeys', () => {
  const a = freshKey()
  const b = freshKey()
  const kidOf = (key: ReturnType<typeof freshKey>) =>
    jwkThumbprint(createPublicKey(key).export({ format: 'jwk' }) as typeof rfcPublic)

  it('reads a JSON array of JWKs, a JWKS, and PEM blocks, with thumbprint kids', () => {
    const jwk = (key: ReturnType<typeof freshKey>) => ({
      ...createPublicKey(key).export({ format: 'jwk' }),
      kid: 'ignored',
    })
    const expected = [kidOf(a), kidOf(b)]
    expect(parseRetiredKeys(JSON.stringify([jwk(a), jwk(b)])).map((k) => k.kid)).toEqual(expected)
    expect(parseRetiredKeys(JSON.stringify({ keys: [jwk(a), jwk(b)] })).map((k) => k.kid)).toEqual(
      expected,
    )
    expect(parseRetiredKeys(`${publicPemOf(a)}\n${publicPemOf(b)}`).map((k) => k.kid)).toEqual(
      expected,
    )
    expect(parseRetiredKeys(`${publicPemOf(a)}${publicPemOf(a)}`).map((k) => k.kid)).toEqual([
      kidOf(a),
    ])
    expect(parseRetiredKeys('')).toEqual([])
  })

  it('refuses private keys and other forms', () => {
    expect(() => parseRetiredKeys(JSON.stringify([rfcJwk]))).toThrow(
      'RECEIPT_RETIRED_KEYS[0] is a private key: give only its public part (no "d")',
    )
    expect(() => parseRetiredKeys(pemOf(a))).toThrow(
      'RECEIPT_RETIRED_KEYS holds a private key: give only the public keys (SPKI PEM or JWK)',
    )
    expect(() => parseRetiredKeys('{"keys": 3}')).toThrow(
      'RECEIPT_RETIRED_KEYS must be a JSON array of JWKs or a JWKS',
    )
    expect(() => parseRetiredKeys('kid-1')).toThrow(
      'RECEIPT_RETIRED_KEYS must be public JWKs (JSON) or "-----BEGIN PUBLIC KEY-----" PEMs',
    )
    const p256 = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey
    expect(() => parseRetiredKeys(publicPemOf(p256))).toThrow(
      'RECEIPT_RETIRED_KEYS[0] must be an Ed25519 key, not ec',
    )
  })
})

describe('resolveSigningKey', () => {
  let dir: string
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'receipt-key-'))
  })
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('prefers the configured key and writes no file', async () => {
    const { key, source } = resolveSigningKey(JSON.stringify(rfcJwk), join(dir, 'data'))
    expect(source).toBe('configured')
    expect(key.publicJwk.kid).toBe(RFC8037.thumbprint)
    await expect(stat(join(dir, 'data'))).rejects.toThrow(/ENOENT/)
  })

  it('generates a dev key once (PKCS#8 PEM, mode 0600) and reuses it', async () => {
    const data = join(dir, 'data')
    const first = resolveSigningKey(undefined, data)
    const second = resolveSigningKey(undefined, data)
    expect(first.source).toBe('generated')
    expect(second.source).toBe('generated')
    expect(second.key.publicJwk).toEqual(first.key.publicJwk)
    const file = join(data, KEY_FILE_NAME)
    expect((await stat(file)).mode & 0o777).toBe(0o600)
    const text = await readFile(file, 'utf8')
    expect(text.startsWith('-----BEGIN PRIVATE KEY-----\n')).toBe(true)
    // The file's text is a valid RECEIPT_SIGNING_KEY for the same key.
    expect(resolveSigningKey(text, dir).key.publicJwk).toEqual(first.key.publicJwk)
  })

  it('refuses a damaged key file with the way out', async () => {
    await writeFile(join(dir, KEY_FILE_NAME), 'garbage')
    expect(() => resolveSigningKey(undefined, dir)).toThrow(
      /delete .*receipt-signing-key or set RECEIPT_SIGNING_KEY$/,
    )
  })
})
