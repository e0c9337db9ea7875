import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { devAccount } from '../src/devnet/anvil.js'
import { createDevKeypair } from '../src/devnet/solana/keys.js'
import type { DevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { catalog, findToolByPath } from '../src/tools/catalog.js'
import type { ToolDefinition, ToolEnv } from '../src/tools/types.js'
import { type PayerKeys, paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { bothRails, payerKeys, payToBalance, solanaKeys } from './helpers/rails.js'
import { type DevService, type RunningService, startDevService } from './helpers/service.js'

// End-to-end over real parts: anvil (Base, chain id 8453) and litesvm (Solana) with USDC at the
// real addresses, the official @x402/core facilitator with the EVM and SVM exact schemes, the
// service over HTTP, and the official @x402/fetch client.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
let stack: DevStack
let svc: RunningService
let events: PaymentEvent[]

beforeAll(async () => {
  dev = await startDevService({ payers: 4, clock })
  ;({ stack, svc, events } = dev)
})
afterAll(() => dev?.stop())

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })

/** Signs a payment for `path` without sending it: the PAYMENT-SIGNATURE header value. */
async function signPayment(
  keys: PayerKeys,
  path: string,
  body: unknown,
  preference: 'evm' | 'solana',
) {
  const unpaid = await post(path, body)
  expect(unpaid.status).toBe(402)
  const http = new x402HTTPClient(await payerClient(keys, preference))
  const required = http.getPaymentRequiredResponse((n) => unpaid.headers.get(n))
  const payload = await http.createPaymentPayload(required)
  return http.encodePaymentSignatureHeader(payload)['PAYMENT-SIGNATURE'] as string
}

const expectedResult = (tool: ToolDefinition) => tool.run(tool.input.parse(tool.examples[0]), clock)

describe.each(['evm', 'solana'] as const)('every tool paid on the %s rail', (rail) => {
  it.each(catalog.map((t) => [t.path, t] as const))(
    '%s: 402 -> pay -> 200, payTo +price',
    async (_p, tool) => {
      const balance = () => payToBalance(stack, rail)
      const before = await balance()
      const unpaid = await post(tool.path, tool.examples[0])
      expect(unpaid.status).toBe(402)
      const required = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED') ?? '')
      expect(required.accepts.map((a) => [a.network, a.amount])).toEqual([
        ['eip155:8453', tool.price],
        [stack.solana.network, tool.price],
      ])

      const pay = await paidFetch(payerKeys(stack, rail, 0), rail)
      const res = await pay(`${svc.baseUrl}${tool.path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(tool.examples[0]),
      })
      expect(res.status).toBe(200)
      expect(await json(res)).toEqual({ ok: true, result: expectedResult(tool) })
      const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
      expect(receipt.success).toBe(true)
      expect(receipt.network).toBe(rail === 'evm' ? 'eip155:8453' : stack.solana.network)
      expect((await balance()) - before).toBe(BigInt(tool.price))
    },
  )
})

describe('HTTP paid calls on the devnet', () => {
  it('returns the FIPS 180-2 SHA-256 digest of "abc"', async () => {
    const pay = await paidFetch(payerKeys(stack, 'evm', 1))
    const res = await pay(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"abc"}' })
    expect(res.status).toBe(200)
    const { result } = await json(res)
    expect(result.hex).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
  })

  it.each(['evm', 'solana'] as const)(
    'replays a repeated %s payment for the same body without a second transfer, and refuses it for another',
    async (rail) => {
      const keys = payerKeys(stack, rail, 1)
      const header = await signPayment(keys, '/hash', { input: 'replay' }, rail)
      const balance = () => payToBalance(stack, rail)
      const before = await balance()
      const first = await post('/hash', { input: 'replay' }, { 'PAYMENT-SIGNATURE': header })
      expect(first.status).toBe(200)
      const replay = await post('/hash', { input: 'replay' }, { 'PAYMENT-SIGNATURE': header })
      expect(replay.status).toBe(200)
      expect(await json(replay)).toEqual(await json(first))
      expect(
        decodePaymentResponseHeader(replay.headers.get('PAYMENT-RESPONSE') ?? '').transaction,
      ).toBe(decodePaymentResponseHeader(first.headers.get('PAYMENT-RESPONSE') ?? '').transaction)
      const other = await post('/hash', { input: 'other' }, { 'PAYMENT-SIGNATURE': header })
      expect(other.status).toBe(402)
      expect((await json(other)).code).toBe('duplicate_settlement')
      expect((await balance()) - before).toBe(1000n)
    },
  )

  it('lets exactly one of two concurrent requests carrying the same Solana payment through', async () => {
    const keys = payerKeys(stack, 'solana', 2)
    const header = await signPayment(keys, '/hash', { input: 'race' }, 'solana')
    const before = await stack.solana.usdcBalance(stack.solana.payTo)
    const responses = await Promise.all([
      post('/hash', { input: 'race' }, { 'PAYMENT-SIGNATURE': header }),
      post('/hash', { input: 'race' }, { 'PAYMENT-SIGNATURE': header }),
    ])
    // The second is answered 409 payment_in_progress while the first runs, or replayed after.
    const statuses = responses.map((r) => r.status).sort()
    expect([
      [200, 200],
      [200, 409],
    ]).toContainEqual(statuses)
    expect((await stack.solana.usdcBalance(stack.solana.payTo)) - before).toBe(1000n)
  })

  it('rejects underpaying: a 1000 payment presented to /pipeline (3000)', async () => {
    const header = await signPayment(payerKeys(stack, 'evm', 1), '/hash', { input: 'x' }, 'evm')
    const before = await stack.evm.usdcBalance(stack.evm.payTo)
    const pipeline = findToolByPath('/pipeline') as ToolDefinition
    const res = await post('/pipeline', pipeline.examples[0], { 'PAYMENT-SIGNATURE': header })
    expect(res.status).toBe(402)
    expect((await json(res)).code).toBe('invalid_payment')
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(before)
  })

  it.each(['evm', 'solana'] as const)(
    'answers 402 to an underfunded %s payer (999 < 1000)',
    async (rail) => {
      let keys: PayerKeys
      let balance: () => Promise<bigint>
      if (rail === 'evm') {
        const poor = devAccount(19)
        await stack.evm.mint(poor.address, 999n)
        keys = { evmPrivateKey: poor.privateKey }
        balance = () => stack.evm.usdcBalance(poor.address)
      } else {
        const poor = await createDevKeypair('underfunded-e2e')
        await stack.solana.mint(poor.address, 999n)
        keys = solanaKeys(stack, poor.secretKey)
        balance = () => stack.solana.usdcBalance(poor.address)
      }
      const header = await signPayment(keys, '/hash', { input: 'poor' }, rail)
      const res = await post('/hash', { input: 'poor' }, { 'PAYMENT-SIGNATURE': header })
      expect(res.status).toBe(402)
      expect((await json(res)).code).toBe('payment_verification_failed')
      const reason = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '').error
      expect(reason).toBe(
        rail === 'evm'
          ? 'invalid_exact_evm_insufficient_balance'
          : 'invalid_exact_svm_transaction_simulation_failed',
      )
      expect(await balance()).toBe(999n)
    },
  )

  it('answers a paid call that fails in the tool with 400 and leaves the payer balance unchanged', async () => {
    const payer = stack.evm.payers[1]?.address as `0x${string}`
    const before = await stack.evm.usdcBalance(payer)
    const pay = await paidFetch(payerKeys(stack, 'evm', 1))
    const res = await pay(`${svc.baseUrl}/base64`, {
      method: 'POST',
      body: JSON.stringify({ mode: 'decode', input: 'ab*d' }),
    })
    expect(res.status).toBe(400)
    expect((await json(res)).code).toBe('invalid_base64')
    expect(await stack.evm.usdcBalance(payer)).toBe(before)
  })

  it('fails closed with 503 when the facilitator is down, and runs no tool', async () => {
    const header = await signPayment(payerKeys(stack, 'evm', 1), '/hash', { input: 'down' }, 'evm')
    events.length = 0
    await stack.stopFacilitator()
    try {
      const res = await post('/hash', { input: 'down' }, { 'PAYMENT-SIGNATURE': header })
      expect(res.status).toBe(503)
      expect((await json(res)).code).toBe('facilitator_unavailable')
      expect(events).toEqual([])
      const health = await json(await fetch(`${svc.baseUrl}/health`))
      expect(health.status).toBe('degraded')
    } finally {
      await stack.startFacilitator()
    }
    const res = await post('/hash', { input: 'down' }, { 'PAYMENT-SIGNATURE': header })
    expect(res.status).toBe(200)
  })

  it.each(['evm', 'solana'] as const)(
    'serves a client that prefers %s from the same server',
    async (rail) => {
      const keys = bothRails(stack, 2)
      const pay = await paidFetch(keys, rail)
      const res = await pay(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"either"}' })
      expect(res.status).toBe(200)
      const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
      expect(receipt.network).toBe(rail === 'evm' ? 'eip155:8453' : stack.solana.network)
    },
  )
})
