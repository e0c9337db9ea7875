import { generateKeyPairSync } from 'node:crypto'
import type { SettleResponse } from '@x402/core/types'
import { type JWSSignedReceipt, verifyReceiptSignatureJWS } from '@x402/extensions/offer-receipt'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import {
  createReceipts,
  DELIVERY_RECEIPT,
  DELIVERY_RECEIPT_INFO_SCHEMA,
  type Delivery,
  OFFER_RECEIPT,
  parseSigningKey,
} from './index.js'

const newKey = () =>
  parseSigningKey(
    generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  )
const ISS = 'https://tools.example'
const delivery: Delivery = {
  iat: 1_700_000_000,
  resource: `${ISS}/hash`,
  tool: 'hash',
  input_sha256: '1'.repeat(64),
  result_sha256: '2'.repeat(64),
  network: 'eip155:8453',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  amount: '1000',
  pay_to: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  transaction: `0x${'3'.repeat(64)}`,
}
const settlement: SettleResponse = {
  success: true,
  transaction: delivery.transaction as string,
  network: 'eip155:8453',
  payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
  extensions: { other: { info: 1 } },
}

describe('createReceipts', () => {
  const key = newKey()
  const receipts = createReceipts({ issuer: ISS, signingKey: key })

  it('deliver: the delivery receipt and the official receipt in the SettleResponse extensions', async () => {
    const delivered = await receipts.deliver(settlement, delivery)
    const extension = delivered.extensions?.[DELIVERY_RECEIPT] as { info: { receipt: string } }
    const { receipt } = extension.info
    expect(delivered.extensions?.[DELIVERY_RECEIPT]).toEqual({
      info: { receipt },
      schema: DELIVERY_RECEIPT_INFO_SCHEMA,
    })
    // Offline, with jose and the published JWKS only.
    const { payload } = await jwtVerify(receipt, createLocalJWKSet(receipts.jwks()))
    expect(payload).toEqual({ iss: ISS, ...delivery })
    const official = delivered.extensions?.[OFFER_RECEIPT] as {
      info: { receipt: JWSSignedReceipt }
    }
    const jwk = receipts.jwks().keys[0] as object
    expect(await verifyReceiptSignatureJWS(official.info.receipt, jwk as never)).toMatchObject({
      resourceUrl: delivery.resource,
      payer: settlement.payer,
      transaction: settlement.transaction,
    })
    // Facilitator fields and other extensions are kept; the argument is not changed.
    expect(delivered).toMatchObject({ ...settlement, extensions: { other: { info: 1 } } })
    expect(Object.keys(settlement.extensions ?? {})).toEqual(['other'])
  })

  it('deliver on a replay (no payer): the delivery receipt only', async () => {
    const { payer: _payer, ...replayed } = settlement
    const delivered = await receipts.deliver(replayed, delivery)
    expect(Object.keys(delivered.extensions ?? {}).sort()).toEqual([DELIVERY_RECEIPT, 'other'])
  })

  it('publishes its key with the thumbprint kid, and a DID document at the did:web place', () => {
    expect(receipts.kid).toBe(key.publicJwk.kid)
    expect(receipts.jwks()).toEqual({ keys: [key.publicJwk] })
    expect(receipts.didDocumentPath).toBe('/.well-known/did.json')
    expect(receipts.didDocument().assertionMethod).toEqual([
      `did:web:tools.example#${key.publicJwk.kid}`,
    ])
  })

  it('verify: its own receipt, with the key status', async () => {
    const receipt = await receipts.deliveryReceipt(delivery)
    expect(await receipts.verify(receipt)).toEqual({
      valid: true,
      kid: key.publicJwk.kid,
      key: 'current',
      claims: { iss: ISS, ...delivery },
    })
  })

  it('rotation: a receipt signed before keeps verifying once its key is retired', async () => {
    const before = await receipts.deliveryReceipt(delivery)
    const next = newKey()
    const rotated = createReceipts({
      issuer: ISS,
      signingKey: next,
      retiredKeys: [key.publicJwk],
    })
    expect(rotated.jwks().keys.map((k) => k.kid)).toEqual([next.publicJwk.kid, key.publicJwk.kid])
    expect(await rotated.verify(before)).toMatchObject({
      valid: true,
      kid: key.publicJwk.kid,
      key: 'retired',
    })
    await jwtVerify(before, createLocalJWKSet(rotated.jwks()))
    // Without the retired key, the old receipt's key is unknown.
    const forgetful = createReceipts({ issuer: ISS, signingKey: next })
    expect(await forgetful.verify(before)).toMatchObject({ valid: false, reason: 'unknown_key' })
  })
})
