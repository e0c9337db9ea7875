import { generateKeyPairSync } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type FacilitatorClient, x402ResourceServer } from '@x402/core/server'
import type { PaymentRequirements, SettleResponse } from '@x402/core/types'
import {
  extractJWSHeader,
  extractOffersFromPaymentRequired,
  type JWSSignedOffer,
  type JWSSignedReceipt,
  verifyOfferSignatureJWS,
  verifyReceiptSignatureJWS,
} from '@x402/extensions/offer-receipt'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parseSigningKey } from './keys.js'
import {
  createOfferReceipt,
  OFFER_RECEIPT,
  OFFER_REFRESH_SECONDS,
  OFFER_VALIDITY_SECONDS,
} from './offer-receipt.js'
import { buildDidDocument, buildJwks, didWeb } from './publish.js'

const key = parseSigningKey(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
)
const publicJwk = { kty: 'OKP', crv: 'Ed25519', x: key.publicJwk.x }

const requirements: PaymentRequirements[] = [
  {
    scheme: 'exact',
    network: 'eip155:8453',
    amount: '1000',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  },
  {
    scheme: 'exact',
    network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
    amount: '1000',
    asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    payTo: 'GnHJZ2r8nuwXtCdcpHWkCEBz4yWBS1dnN7uEcqMUzcBk',
    maxTimeoutSeconds: 60,
    extra: { feePayer: 'GnHJZ2r8nuwXtCdcpHWkCEBz4yWBS1dnN7uEcqMUzcBk' },
  },
]
const resource = {
  url: 'https://tools.example/hash',
  description: 'Hash',
  mimeType: 'application/json',
}

/** A resource server as the gate uses it (no scheme is needed to build a PaymentRequired). */
function serverWith(extension: ReturnType<typeof createOfferReceipt>['extension']) {
  return new x402ResourceServer({} as FacilitatorClient).registerExtension(extension)
}

describe('createOfferReceipt: signed offers in the 402', () => {
  it('adds one JWS offer per accepts entry, verifiable with the key, valid for 300 s', async () => {
    const kid = 'did:web:tools.example#k1'
    const offers = createOfferReceipt(key, kid)
    const before = Math.floor(Date.now() / 1000)
    const required = await serverWith(offers.extension).createPaymentRequiredResponse(
      requirements,
      resource,
      'Payment required',
      offers.declaration,
    )
    const signed = extractOffersFromPaymentRequired(required) as JWSSignedOffer[]
    expect(signed.map((o) => [o.format, o.acceptIndex])).toEqual([
      ['jws', 0],
      ['jws', 1],
    ])
    for (const [i, offer] of signed.entries()) {
      expect(extractJWSHeader(offer.signature)).toEqual({ alg: 'EdDSA', kid })
      const payload = await verifyOfferSignatureJWS(offer, publicJwk)
      const { scheme, network, asset, payTo, amount } = requirements[i] as PaymentRequirements
      expect(payload).toMatchObject({
        version: 1,
        resourceUrl: resource.url,
        ...{ scheme, network, asset, payTo, amount },
      })
      expect(payload.validUntil - before).toBeGreaterThanOrEqual(OFFER_VALIDITY_SECONDS)
      expect(payload.validUntil - before).toBeLessThan(OFFER_VALIDITY_SECONDS + 30)
    }
    // The declaration itself is not published: the signed offers replace it.
    expect(Object.keys(required.extensions?.[OFFER_RECEIPT] as object).sort()).toEqual([
      'info',
      'schema',
    ])
  })

  it('signs once per period: the same offers until the period changes, then new ones', async () => {
    let now = 1_000_000 * OFFER_REFRESH_SECONDS * 1000
    const offers = createOfferReceipt(key, 'did:web:tools.example#k1', () => now)
    const server = serverWith(offers.extension)
    const build = async () =>
      extractOffersFromPaymentRequired(
        await server.createPaymentRequiredResponse(requirements, resource, 'x', offers.declaration),
      ).map((o) => o.signature)
    const first = await build()
    const epoch = offers.epoch()
    now += (OFFER_REFRESH_SECONDS - 1) * 1000
    expect(await build()).toEqual(first)
    expect(offers.epoch()).toBe(epoch)
    now += 1000
    await new Promise((resolve) => setTimeout(resolve, 1100)) // a new iat second for the SDK's clock
    const next = await build()
    expect(offers.epoch()).toBe(epoch + 1)
    expect(next).toHaveLength(2)
    expect(next[0]).not.toBe(first[0])
    // Another resource gets its own offers.
    const other = await server.createPaymentRequiredResponse(
      requirements,
      { ...resource, url: 'https://tools.example/hmac' },
      'x',
      offers.declaration,
    )
    const payload = await verifyOfferSignatureJWS(
      extractOffersFromPaymentRequired(other)[0] as JWSSignedOffer,
      publicJwk,
    )
    expect(payload.resourceUrl).toBe('https://tools.example/hmac')
  })

  it("accepts a payment echoing an earlier period's offers (offers are a dynamic field)", async () => {
    let now = 5_000_000 * OFFER_REFRESH_SECONDS * 1000
    const offers = createOfferReceipt(key, 'did:web:tools.example#k1', () => now)
    const server = serverWith(offers.extension)
    const old = await server.createPaymentRequiredResponse(
      requirements,
      resource,
      'x',
      offers.declaration,
    )
    now += OFFER_REFRESH_SECONDS * 1000
    const current = await server.createPaymentRequiredResponse(
      requirements,
      resource,
      'x',
      offers.declaration,
    )
    const echo = { x402Version: 2, extensions: old.extensions } as never
    expect(server.validateExtensions(current, echo)).toEqual({ valid: true })
  })
})

describe('createOfferReceipt: the receipt', () => {
  const offers = createOfferReceipt(key, 'did:web:tools.example#k1')
  const settlement: SettleResponse = {
    success: true,
    transaction: `0x${'ab'.repeat(32)}`,
    network: 'eip155:8453',
    payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
  }

  it('signs the official receipt with the transaction, for the resource URL', async () => {
    const before = Math.floor(Date.now() / 1000)
    const extension = (await offers.receiptFor(settlement, resource.url)) as {
      info: { receipt: JWSSignedReceipt }
      schema: object
    }
    expect(extension.info.receipt.format).toBe('jws')
    const payload = await verifyReceiptSignatureJWS(extension.info.receipt, publicJwk)
    expect(payload).toEqual({
      version: 1,
      network: 'eip155:8453',
      resourceUrl: resource.url,
      payer: settlement.payer,
      issuedAt: expect.any(Number),
      transaction: settlement.transaction,
    })
    expect(payload.issuedAt).toBeGreaterThanOrEqual(before)
    expect(extension.schema).toMatchObject({ required: ['receipt'] })
  })

  it('issues none without a payer (a replay) or after a failed settlement', async () => {
    const { payer: _payer, ...replayed } = settlement
    expect(await offers.receiptFor(replayed, resource.url)).toBeUndefined()
    expect(
      await offers.receiptFor({ ...settlement, success: false, errorReason: 'x' }, resource.url),
    ).toBeUndefined()
  })
})

describe('the kid resolves through the DID document (the SDK resolver, over HTTP)', () => {
  let server: Server
  let base: string
  beforeAll(async () => {
    server = createServer((request, response) => {
      if (request.url !== '/.well-known/did.json') return response.writeHead(404).end()
      const document = buildDidDocument(didWeb(base), buildJwks(key.publicJwk, []))
      response.writeHead(200, { 'Content-Type': 'application/json' })
      response.end(JSON.stringify(document))
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  afterAll(() => new Promise((resolve) => server.close(resolve)))

  it('verifies an offer and a receipt with no key given, from their did:web kid', async () => {
    const offers = createOfferReceipt(key, `${didWeb(base)}#${key.publicJwk.kid}`)
    const required = await serverWith(offers.extension).createPaymentRequiredResponse(
      requirements,
      resource,
      'x',
      offers.declaration,
    )
    const offer = extractOffersFromPaymentRequired(required)[0] as JWSSignedOffer
    expect((await verifyOfferSignatureJWS(offer)).amount).toBe('1000')
    const receipt = (await offers.receiptFor(
      { success: true, transaction: '0x01', network: 'eip155:8453', payer: '0xabc' },
      resource.url,
    )) as { info: { receipt: JWSSignedReceipt } }
    expect((await verifyReceiptSignatureJWS(receipt.info.receipt)).payer).toBe('0xabc')
  })
})
