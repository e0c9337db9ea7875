import { type Address, getBase58Decoder } from '@solana/kit'
import { x402HTTPClient } from '@x402/core/client'
import { HTTPFacilitatorClient } from '@x402/core/http'
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest'
import { createBridge } from '../clients/mcp-bridge/src/bridge.js'
import { SpendLedger } from '../clients/mcp-bridge/src/ledger.js'
import { createReceiptChecker } from '../clients/mcp-bridge/src/receipts.js'
import { connectRemote } from '../clients/mcp-bridge/src/remote.js'
import { createWallet } from '../clients/mcp-bridge/src/wallet.js'
import type { FacilitatorReceived } from '../src/devnet/facilitator-server.js'
import { runPay } from '../src/devnet/pay-command.js'
import type { DevFacilitator, DevStack } from '../src/devnet/stack.js'
import type { ToolEnv } from '../src/tools/types.js'
import { payerClient } from './helpers/clients.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// Issue 30, "every charge delivers its result", on the devnet (anvil, litesvm, the official
// facilitator): a settle that lands on chain and then loses its answer. First the fault itself,
// then the two clients of this repository, which must resend the SAME payment (never sign a new
// one) when the service answers `settlement_unknown`. Whether that resend then gets the result
// depends on how the service judges a settlement in doubt; here the clients' side is checked: one
// signature, the same payload at the facilitator, a bounded count of resends after Retry-After, one
// price off the payer's balance, and a final message.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
let stack: DevStack
let facilitator: DevFacilitator

beforeAll(async () => {
  dev = await startDevService({ payers: 4, clock })
  stack = dev.stack
  facilitator = stack.facilitators[0] as DevFacilitator
}, 180_000)
afterAll(async () => {
  // The shared stack: never leave a fault set.
  facilitator.faults.loseNextSettleAnswers = 0
  facilitator.faults.failNextSettleAnswers = 0
  await dev?.stop()
})
beforeEach(() => {
  facilitator.faults.loseNextSettleAnswers = 0
  facilitator.faults.failNextSettleAnswers = 0
})

/** The settles the facilitator ran after `from` (an index into `received`). */
const settlesSince = (from: number): FacilitatorReceived[] =>
  facilitator.received.slice(from).filter((r) => r.op === 'settle')

const payerBalance = (rail: Rail, index: number): Promise<bigint> =>
  rail === 'evm'
    ? stack.evm.usdcBalance(stack.evm.payers[index]?.address as `0x${string}`)
    : stack.solana.usdcBalance(stack.solana.payers[index]?.address as Address)

/** A payment of payer 0 on `rail` for the service's /hash, signed for a real 402 of it. */
async function signedPayment(rail: Rail, input: string) {
  // The 402 names the requirements (on Solana, this facilitator's fee payer).
  const unpaid = await fetch(`${dev.svc.baseUrl}/hash`, { method: 'POST', body: input })
  expect(unpaid.status).toBe(402)
  const client = new x402HTTPClient(await payerClient(payerKeys(stack, rail, 0), rail))
  const required = client.getPaymentRequiredResponse((n) => unpaid.headers.get(n))
  return client.createPaymentPayload(required)
}

describe('the devnet facilitator faults that land a settle and change its answer', () => {
  it.each(['evm', 'solana'] as const)(
    'loseNextSettleAnswers settles on chain, then resets the connection unanswered (%s)',
    async (rail) => {
      const payload = await signedPayment(rail, '{"input":"lost answer"}')
      const before = await payToBalance(stack, rail)
      const from = facilitator.received.length

      facilitator.faults.loseNextSettleAnswers = 1
      const error = await new HTTPFacilitatorClient({ url: stack.facilitatorUrl })
        .settle(payload, payload.accepted)
        .then(
          () => undefined,
          (e: unknown) => e as Error & { cause?: { code?: string } },
        )
      // undici: "fetch failed", caused by a SocketError "other side closed".
      expect(error?.message).toBe('fetch failed')
      expect(error?.cause?.code).toBe('UND_ERR_SOCKET')
      expect(facilitator.faults.loseNextSettleAnswers).toBe(0)
      expect(settlesSince(from)).toMatchObject([
        { status: 200, answer: 'lost', network: payload.accepted.network },
      ])
      // It landed: the payee got exactly the price.
      expect((await payToBalance(stack, rail)) - before).toBe(BigInt(payload.accepted.amount))
    },
  )

  it.each(['evm', 'solana'] as const)(
    'failNextSettleAnswers settles on chain, then answers 500 (%s)',
    async (rail) => {
      const payload = await signedPayment(rail, '{"input":"failed answer"}')
      const before = await payToBalance(stack, rail)
      const from = facilitator.received.length

      facilitator.faults.failNextSettleAnswers = 1
      await expect(
        new HTTPFacilitatorClient({ url: stack.facilitatorUrl }).settle(payload, payload.accepted),
      ).rejects.toThrow(/\(500\).*fault injected: settle failed after broadcast/)
      expect(facilitator.faults.failNextSettleAnswers).toBe(0)
      expect(settlesSince(from)).toMatchObject([{ status: 200, answer: 'failed' }])
      expect((await payToBalance(stack, rail)) - before).toBe(BigInt(payload.accepted.amount))
    },
  )
})

describe('npm run pay when the facilitator loses the answer to the first settle', () => {
  it.each([
    ['evm', 1],
    ['solana', 1],
  ] as const)('resends the same payment, one price charged (%s)', async (rail, payer) => {
    const payerBefore = await payerBalance(rail, payer)
    const payToBefore = await payToBalance(stack, rail)
    const from = facilitator.received.length
    const stdout: string[] = []
    const stderr: string[] = []
    const waits: number[] = []
    const env =
      rail === 'evm'
        ? { PAYER_PRIVATE_KEY: stack.evm.payers[payer]?.privateKey as string }
        : {
            PAYER_SOLANA_SECRET_KEY: getBase58Decoder().decode(
              stack.solana.payers[payer]?.secretKey as Uint8Array,
            ),
            SOLANA_RPC_URL: stack.solana.rpcUrl,
          }

    facilitator.faults.loseNextSettleAnswers = 1
    const code = await runPay(
      ['--rail', rail, '--url', dev.svc.baseUrl, 'hash', `{"input":"pay ${rail}"}`],
      env,
      { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) },
      fetch,
      {
        // Retry-After is recorded and waited out: a resend before it is answered from the
        // service's record, never settled again.
        sleep: async (ms) => {
          waits.push(ms)
          await new Promise((resolve) => setTimeout(resolve, ms))
        },
      },
    )
    const text = stderr.join('')
    const settles = settlesSince(from)
    // The first settle's answer was lost; the service said settlement_unknown with Retry-After 5.
    expect(settles[0]).toMatchObject({ answer: 'lost', status: 200 })
    expect(text).toContain(
      'pay: HTTP 503 settlement_unknown: the tool ran and the payment may have moved; resending ' +
        'the same payment (no new signature) in 5 s, retry 1 of 3',
    )
    expect(waits[0]).toBe(5000)
    // Every resend carried the very same signed payload (at most 3 of them).
    expect(waits.length).toBeGreaterThanOrEqual(1)
    expect(waits.length).toBeLessThanOrEqual(3)
    expect(settles.length).toBeGreaterThanOrEqual(2)
    expect(settles.length).toBeLessThanOrEqual(1 + waits.length)
    expect(new Set(settles.map((s) => s.payloadSha256)).size).toBe(1)
    // One price moved, once.
    expect(payerBefore - (await payerBalance(rail, payer))).toBe(1000n)
    expect((await payToBalance(stack, rail)) - payToBefore).toBe(1000n)
    // The final answer: the result, or a clear word on what happened.
    const final = JSON.parse(stdout.join('')) as { ok: boolean; code?: string }
    if (final.ok) {
      expect(code).toBe(0)
    } else {
      // Today the chain refuses the re-settle (a used nonce, a processed transaction): 402
      // settlement_failed; either way the command says the payment may have moved.
      expect(code).toBe(1)
      expect(text).toMatch(
        /the payment may have moved; check the payer balance|Retrying the same payment later is safe/,
      )
    }
  })
})

describe('the MCP bridge when the facilitator loses the answer to the first settle', () => {
  it('resends the same payment, signs once, one price charged and counted (Base)', async () => {
    const payer = 2
    const key = stack.evm.payers[payer]?.privateKey as `0x${string}`
    const remote = connectRemote({ mcpUrl: new URL(`${dev.svc.baseUrl}/mcp`), version: '0' })
    const logs: string[] = []
    const waits: number[] = []
    const ledger = new SpendLedger({ perCall: 10_000n, perSession: 100_000n }, undefined)
    const bridge = createBridge({
      remote,
      wallet: await createWallet({
        evmPrivateKey: key,
        solanaRpcUrl: stack.solana.rpcUrl,
        perCallCap: 10_000n,
      }),
      ledger,
      log: (m) => logs.push(m),
      receipts: createReceiptChecker({ serviceUrl: dev.svc.baseUrl }),
      settlementRetry: {
        // Waited out, as the pay command's: before it the service answers from its record.
        sleep: async (ms) => {
          waits.push(ms)
          await new Promise((resolve) => setTimeout(resolve, ms))
        },
      },
    })
    try {
      const payerBefore = await payerBalance('evm', payer)
      const payToBefore = await payToBalance(stack, 'evm')
      const from = facilitator.received.length

      facilitator.faults.loseNextSettleAnswers = 1
      const result = await bridge.callTool('payload_hash', { input: 'bridge lost answer' })
      const settles = settlesSince(from)
      expect(settles[0]).toMatchObject({ answer: 'lost', status: 200 })
      expect(logs.filter((l) => l.startsWith('signed payment for'))).toHaveLength(1)
      const resends = logs.filter((l) => l.includes('resending the same payment'))
      expect(resends[0]).toBe(
        'paid call of payload_hash: settlement_unknown; resending the same payment in 5 s (retry 1 of 3)',
      )
      expect(resends.length).toBeLessThanOrEqual(3)
      expect(waits).toEqual(resends.map(() => 5000))
      expect(settles.length).toBeGreaterThanOrEqual(2)
      expect(settles.length).toBeLessThanOrEqual(1 + resends.length)
      expect(new Set(settles.map((s) => s.payloadSha256)).size).toBe(1)
      expect(payerBefore - (await payerBalance('evm', payer))).toBe(1000n)
      expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
      // The payment moved: it counts against the caps, once, whatever the final answer.
      expect(ledger.snapshot().session).toEqual({ [stack.evm.network]: 1000n })
      if (result.isError) {
        expect(JSON.stringify(result.content)).toMatch(/may have moved/)
      }
    } finally {
      await remote.close()
    }
  })
})
