import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload } from '@x402/core/types'
import type { Hex } from 'viem'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createBridge } from '../clients/mcp-bridge/src/bridge.js'
import { SpendLedger } from '../clients/mcp-bridge/src/ledger.js'
import { createReceiptChecker } from '../clients/mcp-bridge/src/receipts.js'
import { connectRemote } from '../clients/mcp-bridge/src/remote.js'
import { createWallet } from '../clients/mcp-bridge/src/wallet.js'
import type { DevFacilitator, DevStack } from '../src/devnet/stack.js'
import { createTelemetry, type Telemetry } from '../src/telemetry/index.js'
import type { ToolEnv } from '../src/tools/types.js'
import { payerClient } from './helpers/clients.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, sharedDevStack, startDevService } from './helpers/service.js'

// Issue 30 on the devnet (anvil, litesvm, the official facilitator) with the chain judge
// (EVM_RPC_URL, SOLANA_RPC_URL) and the settlement ledger (SQLite telemetry): a settle that lands
// and loses its answer is delivered on the payer's retry of the same payment, with the landed
// transaction, one transfer, counted once; a canceled authorization is never delivered.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
const PRICE = 1000n
let dev: DevService
let stack: DevStack
let facilitator: DevFacilitator
let telemetry: Telemetry
let dir: string

beforeAll(async () => {
  stack = await sharedDevStack()
  dir = mkdtempSync(join(tmpdir(), 'settlement-delivered-'))
  telemetry = await createTelemetry({
    databaseUrl: join(dir, 'telemetry.sqlite'),
    dataDir: dir,
    salt: 'settlement-delivered-salt',
    cacheMs: 0,
  })
  dev = await startDevService({
    payers: 4,
    clock,
    env: { EVM_RPC_URL: stack.evm.rpcUrl, SOLANA_RPC_URL: stack.solana.rpcUrl },
    overrides: { telemetry },
  })
  facilitator = stack.facilitators[0] as DevFacilitator
}, 180_000)
afterAll(async () => {
  facilitator.faults.loseNextSettleAnswers = 0
  facilitator.faults.settleFailures = 0
  await dev?.stop()
  await telemetry?.close()
  rmSync(dir, { recursive: true, force: true })
})
beforeEach(() => {
  facilitator.faults.loseNextSettleAnswers = 0
  facilitator.faults.settleFailures = 0
})

/** A payment of payer `index` on `rail` for /hash, signed for a real 402 of it. */
async function signedPayment(rail: Rail, input: string, index = 0): Promise<PaymentPayload> {
  const unpaid = await fetch(`${dev.svc.baseUrl}/hash`, { method: 'POST', body: input })
  expect(unpaid.status).toBe(402)
  const client = new x402HTTPClient(await payerClient(payerKeys(stack, rail, index), rail))
  return client.createPaymentPayload(
    client.getPaymentRequiredResponse((n) => unpaid.headers.get(n)),
  )
}

const post = (input: string, payment: PaymentPayload) =>
  fetch(`${dev.svc.baseUrl}/hash`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment),
    },
    body: input,
  })

const settlesSince = (from: number) =>
  facilitator.received.slice(from).filter((r) => r.op === 'settle')

describe('a settle that landed and lost its answer', () => {
  it.each(['evm', 'solana'] as const)(
    'is delivered on the retry of the same payment with the landed transaction: one transfer, counted once (%s, HTTP)',
    async (rail) => {
      const input = `{"input":"delivered ${rail}"}`
      const payment = await signedPayment(rail, input, 1)
      const before = await payToBalance(stack, rail)
      const settledBefore = (await telemetry.stats()).successful_paid_calls
      const from = facilitator.received.length

      facilitator.faults.loseNextSettleAnswers = 1
      const first = await post(input, payment)
      expect(first.status).toBe(503)
      expect(((await first.json()) as { code: string }).code).toBe('settlement_unknown')
      expect((await payToBalance(stack, rail)) - before).toBe(PRICE)
      expect((await telemetry.stats()).successful_paid_calls).toBe(settledBefore)

      const retry = await post(input, payment)
      expect(retry.status).toBe(200)
      const body = (await retry.json()) as { ok: boolean; result: unknown }
      expect(body.ok).toBe(true)
      const response = decodePaymentResponseHeader(retry.headers.get('PAYMENT-RESPONSE') ?? '')
      expect(response).toMatchObject({ success: true, network: payment.accepted.network })
      expect(response.transaction).toMatch(
        rail === 'evm' ? /^0x[0-9a-f]{64}$/ : /^[1-9A-HJ-NP-Za-km-z]{64,88}$/,
      )
      // The facilitator was not asked to settle again; one price moved.
      expect(settlesSince(from)).toHaveLength(1)
      expect((await payToBalance(stack, rail)) - before).toBe(PRICE)
      expect((await telemetry.stats()).successful_paid_calls).toBe(settledBefore + 1)
      // Settled now: a replay, nothing counted again.
      const replay = await post(input, payment)
      expect(replay.status).toBe(200)
      expect(
        decodePaymentResponseHeader(replay.headers.get('PAYMENT-RESPONSE') ?? '').transaction,
      ).toBe(response.transaction)
      expect((await telemetry.stats()).successful_paid_calls).toBe(settledBefore + 1)
    },
    90_000,
  )
})

describe('a settle that landed and lost its answer, over MCP', () => {
  it('is delivered to the MCP bridge on its resend of the same payment: signed once, one transfer, counted once (Base)', async () => {
    const payer = 3
    const remote = connectRemote({ mcpUrl: new URL(`${dev.svc.baseUrl}/mcp`), version: '0' })
    const logs: string[] = []
    const bridge = createBridge({
      remote,
      wallet: await createWallet({
        evmPrivateKey: stack.evm.payers[payer]?.privateKey as `0x${string}`,
        solanaRpcUrl: stack.solana.rpcUrl,
        perCallCap: 10_000n,
      }),
      ledger: new SpendLedger({ perCall: 10_000n, perSession: 100_000n }, undefined),
      log: (m) => logs.push(m),
      receipts: createReceiptChecker({ serviceUrl: dev.svc.baseUrl }),
      settlementRetry: { sleep: () => new Promise((resolve) => setTimeout(resolve, 100)) },
    })
    try {
      const before = await payToBalance(stack, 'evm')
      const settledBefore = (await telemetry.stats()).successful_paid_calls
      const from = facilitator.received.length
      facilitator.faults.loseNextSettleAnswers = 1
      const result = await bridge.callTool('payload_hash', { input: 'delivered over mcp' })
      expect(result.isError ?? false, JSON.stringify(result.content)).toBe(false)
      expect(logs.filter((l) => l.startsWith('signed payment for'))).toHaveLength(1)
      expect(logs.filter((l) => l.includes('resending the same payment'))).toHaveLength(1)
      expect(settlesSince(from)).toMatchObject([{ answer: 'lost', status: 200 }])
      expect((await payToBalance(stack, 'evm')) - before).toBe(PRICE)
      expect((await telemetry.stats()).successful_paid_calls).toBe(settledBefore + 1)
    } finally {
      await remote.close()
    }
  }, 90_000)
})

describe('a settle in doubt whose authorization the payer then canceled', () => {
  it('is never delivered: 402 settlement_failed, nothing charged (Base)', async () => {
    const input = '{"input":"canceled"}'
    const payment = await signedPayment('evm', input, 2)
    const before = await payToBalance(stack, 'evm')
    // A 500 before broadcast: the service cannot tell it from one after, so it is in doubt.
    facilitator.faults.settleFailures = 1
    const first = await post(input, payment)
    expect(first.status).toBe(503)
    expect(((await first.json()) as { code: string }).code).toBe('settlement_unknown')
    const nonce = (payment.payload as { authorization: { nonce: Hex } }).authorization.nonce
    await stack.evm.cancelAuthorization(stack.evm.payers[2] as never, nonce)

    const retry = await post(input, payment)
    expect(retry.status).toBe(402)
    const body = (await retry.json()) as { code: string; error: string; result?: unknown }
    expect(body.code).toBe('settlement_failed')
    expect(body.error).toMatch(
      /never landed on chain \(authorization canceled\).*nothing was charged/,
    )
    expect(body.result).toBeUndefined()
    expect(await payToBalance(stack, 'evm')).toBe(before)
  }, 90_000)
})
