import { createHash, generateKeyPairSync } from 'node:crypto'
import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import { extractOffersFromPaymentRequired } from '@x402/extensions/offer-receipt'
import canonicalize from 'canonicalize'
import { createLocalJWKSet, jwtVerify } from 'jose'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { FAKE_SOLANA, fakeGate, fakeRails } from '../../test/helpers/fakes.js'
import {
  createReceipts,
  OFFER_VALIDITY_SECONDS,
  parseSigningKey,
  type Receipts,
} from '../receipts/index.js'
import type { ToolDefinition } from '../tools/types.js'
import type { PaymentRequiredError } from './errors.js'

// The gate's receipt step (src/receipts wired into the gate), over the scripted facilitator of
// test/helpers/fakes.ts and the real receipts.

const NOW = 1_700_000_000
const ISS = 'https://tools.example'
const key = parseSigningKey(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
)

/** A tool with schema defaults: the receipt's input digest is of the input with them applied. */
const shoutTool: ToolDefinition<{ text: string; times: number }, { shout: string }> = {
  id: 'shout',
  path: '/shout',
  mcpName: 'payload_shout',
  operationId: 'shout',
  price: '1000',
  title: 'Shout',
  description: 'Repeats upper-cased text.',
  input: z.object({ text: z.string().max(10), times: z.number().int().default(2) }).strict(),
  output: z.object({ shout: z.string() }),
  examples: [{ text: 'abc', times: 2 }],
  limits: [],
  check: () => {},
  run: ({ text, times }) => ({ shout: text.toUpperCase().repeat(times) }),
}

const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')
const receiptOf = (settlement: SettleResponse) =>
  (settlement.extensions?.['delivery-receipt'] as { info: { receipt: string } } | undefined)?.info
    .receipt ?? ''

function setup(receipts: Receipts = createReceipts({ issuer: ISS, signingKey: key })) {
  const fake = fakeGate({}, undefined, { receipts, env: { nowSeconds: () => NOW } })
  const resource = { url: `${ISS}/shout`, description: 'Shout', mimeType: 'application/json' }
  const call = (input: unknown, payment: unknown) =>
    fake.gate.execute({
      tool: shoutTool as ToolDefinition,
      transport: 'http',
      ...(input === undefined
        ? {}
        : { source: { body: new TextEncoder().encode(JSON.stringify(input)) } }),
      ...(payment === undefined ? {} : { payment: { value: payment } }),
      resource,
    })
  const claimsOf = async (settlement: SettleResponse) =>
    (
      await jwtVerify(receiptOf(settlement), createLocalJWKSet(receipts.jwks()), {
        issuer: ISS,
      })
    ).payload
  return { ...fake, call, claimsOf, receipts }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

describe('payment gate: receipts', () => {
  it('a paid call: the delivery receipt binds the input (defaults applied), result and payment', async () => {
    const { call, pay, claimsOf } = setup()
    const paid = await call({ text: 'ab' }, await pay(0))
    expect(paid.result.value()).toEqual({ shout: 'ABAB' })
    expect(await claimsOf(paid.settlement)).toEqual({
      iss: ISS,
      iat: NOW,
      resource: `${ISS}/shout`,
      tool: 'shout',
      input_sha256: sha256({ text: 'ab', times: 2 }),
      result_sha256: sha256({ shout: 'ABAB' }),
      network: 'eip155:8453',
      asset: fakeRails[0]?.asset,
      amount: '1000',
      pay_to: fakeRails[0]?.payTo,
      transaction: '0xtx',
    })
    expect(paid.settlement).toMatchObject({
      success: true,
      transaction: '0xtx',
      payer: '0xPAYER',
      extensions: { 'offer-receipt': { info: { receipt: { format: 'jws' } } } },
    })
  })

  it('a replay re-signed on the other rail: the receipt names the rail that settled', async () => {
    const { call, pay, claimsOf } = setup()
    const id = { 'payment-identifier': { info: { required: false, id: 'pay_0123456789abcdef' } } }
    await call({ text: 'ab' }, await pay(0, 'n1', '1000', id))
    const replay = await call({ text: 'ab' }, await pay(1, 'n2', '1000', id))
    expect(replay.replayed).toBe(true)
    expect(await claimsOf(replay.settlement)).toMatchObject({
      network: 'eip155:8453',
      asset: fakeRails[0]?.asset,
      pay_to: fakeRails[0]?.payTo,
      transaction: '0xtx',
    })
    expect(replay.settlement.extensions?.['offer-receipt']).toBeUndefined()
    expect((await pay(1)).accepted.network).toBe(FAKE_SOLANA)
  })

  it('signs the offers of the 402 once per period: the cached PaymentRequired is rebuilt after it', async () => {
    let now = 1_000 * OFFER_VALIDITY_SECONDS * 1000
    const { call } = setup(createReceipts({ issuer: ISS, signingKey: key, now: () => now }))
    const required = async () =>
      ((await rejection(call(undefined, undefined))) as PaymentRequiredError).paymentRequired
    const first = await required()
    expect(extractOffersFromPaymentRequired(first as PaymentRequired)).toHaveLength(2)
    expect(await required()).toBe(first)
    now += (OFFER_VALIDITY_SECONDS / 2) * 1000
    const next = await required()
    expect(next).not.toBe(first)
    expect(extractOffersFromPaymentRequired(next)).toHaveLength(2)
    expect(await required()).toBe(next)
  })

  it('a receipt that cannot be signed does not withhold a paid result', async () => {
    const receipts = createReceipts({ issuer: ISS, signingKey: key })
    const { call, pay, calls } = setup({
      ...receipts,
      deliver: async () => {
        throw new Error('signing failed')
      },
    })
    const paid = await call({ text: 'ab' }, await pay(0))
    expect(paid.result.value()).toEqual({ shout: 'ABAB' })
    expect(paid.settlement.extensions).toBeUndefined()
    expect(calls.settle).toBe(1)
  })
})
