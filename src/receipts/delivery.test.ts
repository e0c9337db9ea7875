import { generateKeyPairSync } from 'node:crypto'
import {
  base64url,
  createLocalJWKSet,
  decodeProtectedHeader,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose'
import { describe, expect, it } from 'vitest'
import {
  DELIVERY_RECEIPT_TYPE,
  type DeliveryClaims,
  signDeliveryReceipt,
  verifyDeliveryReceipt,
} from './delivery.js'
import { parseSigningKey, type SigningKey } from './keys.js'
import { buildJwks } from './publish.js'

const keyOf = (): SigningKey =>
  parseSigningKey(
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  )
const key = keyOf()
const other = keyOf()
const jwks = buildJwks(key.publicJwk, [])
const keySet = createLocalJWKSet(jwks)
const ISS = 'https://tools.example'

const claims: DeliveryClaims = {
  iss: ISS,
  iat: 1_700_000_000,
  resource: 'https://tools.example/hash',
  tool: 'hash',
  input_sha256: 'a'.repeat(64),
  result_sha256: 'b'.repeat(64),
  network: 'eip155:8453',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  amount: '1000',
  pay_to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  transaction: `0x${'c'.repeat(64)}`,
}

/** The receipt with its payload replaced (the signature left as it was). */
function withPayload(receipt: string, payload: JWTPayload): string {
  const [header, , signature] = receipt.split('.')
  return `${header}.${base64url.encode(JSON.stringify(payload))}.${signature}`
}

describe('signDeliveryReceipt', () => {
  it('signs a compact JWS that jose verifies against the JWKS: EdDSA, kid, typ, the claims', async () => {
    const receipt = await signDeliveryReceipt(key, claims)
    expect(decodeProtectedHeader(receipt)).toEqual({
      alg: 'EdDSA',
      kid: key.publicJwk.kid,
      typ: DELIVERY_RECEIPT_TYPE,
    })
    const { payload } = await jwtVerify(receipt, keySet, { issuer: ISS })
    expect(payload).toEqual(claims)
  })

  it('refuses a malformed claim: nothing is signed', async () => {
    await expect(
      signDeliveryReceipt(key, { ...claims, input_sha256: 'A'.repeat(64) }),
    ).rejects.toThrow('must be 64 lower-case hex characters')
    await expect(signDeliveryReceipt(key, { ...claims, amount: '0.001' })).rejects.toThrow()
  })
})

describe('verifyDeliveryReceipt', () => {
  it('accepts a receipt of ours, with its kid and claims', async () => {
    const receipt = await signDeliveryReceipt(key, claims)
    expect(await verifyDeliveryReceipt(receipt, keySet, ISS)).toEqual({
      valid: true,
      kid: key.publicJwk.kid,
      claims,
    })
  })

  it('refuses a receipt with one claim changed: bad_signature', async () => {
    const receipt = await signDeliveryReceipt(key, claims)
    for (const change of [{ amount: '1001' }, { result_sha256: 'c'.repeat(64) }, { iat: 1 }]) {
      const verdict = await verifyDeliveryReceipt(
        withPayload(receipt, { ...claims, ...change }),
        keySet,
        ISS,
      )
      expect(verdict).toEqual({
        valid: false,
        kid: key.publicJwk.kid,
        reason: 'bad_signature',
        message: `The signature does not match the receipt's content for key "${key.publicJwk.kid}": it was altered or signed by another key`,
      })
    }
  })

  it('refuses a key not in the JWKS (unknown_key), and our kid on another key (bad_signature)', async () => {
    const foreign = await signDeliveryReceipt(other, claims)
    expect(await verifyDeliveryReceipt(foreign, keySet, ISS)).toEqual({
      valid: false,
      kid: other.publicJwk.kid,
      reason: 'unknown_key',
      message: `The receipt's key "${other.publicJwk.kid}" is not in this service's JWKS (current or retired keys)`,
    })
    const impostor = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA', kid: key.publicJwk.kid, typ: DELIVERY_RECEIPT_TYPE })
      .sign(other.privateKey)
    expect(await verifyDeliveryReceipt(impostor, keySet, ISS)).toMatchObject({
      valid: false,
      reason: 'bad_signature',
    })
  })

  it('refuses what we signed but is no delivery receipt of this service: invalid_claims', async () => {
    const sign = (payload: JWTPayload, typ = DELIVERY_RECEIPT_TYPE) =>
      new SignJWT(payload)
        .setProtectedHeader({ alg: 'EdDSA', kid: key.publicJwk.kid, typ })
        .sign(key.privateKey)
    const otherIssuer = await signDeliveryReceipt(key, { ...claims, iss: 'https://evil.example' })
    expect(await verifyDeliveryReceipt(otherIssuer, keySet, ISS)).toMatchObject({
      valid: false,
      reason: 'invalid_claims',
      message: expect.stringMatching(/^The receipt's "iss" does not match this service/),
    })
    expect(await verifyDeliveryReceipt(await sign(claims, 'JWT'), keySet, ISS)).toMatchObject({
      valid: false,
      reason: 'invalid_claims',
      message: expect.stringMatching(/^The receipt's "typ" does not match this service/),
    })
    const { tool: _tool, ...withoutTool } = claims
    expect(await verifyDeliveryReceipt(await sign(withoutTool), keySet, ISS)).toEqual({
      valid: false,
      kid: key.publicJwk.kid,
      reason: 'invalid_claims',
      message: `The receipt's claim "tool" is missing or malformed: Invalid input: expected string, received undefined`,
    })
  })

  it('refuses what is not a compact JWS, or names no key: malformed', async () => {
    for (const receipt of ['', 'abc', 'a.b.c', `${'x'.repeat(9000)}`]) {
      expect(await verifyDeliveryReceipt(receipt, keySet, ISS)).toMatchObject({
        valid: false,
        reason: 'malformed',
      })
    }
    const noKid = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'EdDSA', typ: DELIVERY_RECEIPT_TYPE })
      .sign(key.privateKey)
    expect(await verifyDeliveryReceipt(noKid, keySet, ISS)).toEqual({
      valid: false,
      reason: 'malformed',
      message: 'The receipt is not a compact JWS whose header names its key (kid)',
    })
  })
})
