import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { x402Client } from '@x402/core/client'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { toClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import { createPublicClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { createTelemetry, type Telemetry } from '../src/telemetry/index.js'
import { type RunningService, startService } from './helpers/service.js'

// Prepaid channels (issue 38) on the devnet with our escrow, through the official client with
// only the batch-settlement client scheme: one deposit pays for many calls, each later call pays
// by voucher without the facilitator, the channel manager claims and settles to payTo exactly
// what was charged, and the payer's refund returns exactly the rest.

const PRICE = 1000n
const DEPOSIT = 1_000_000n
let stack: DevStack
let svc: RunningService
let telemetry: Telemetry

beforeAll(async () => {
  stack = await startDevStack({ payers: 2 })
  telemetry = await createTelemetry({
    databaseUrl: join(mkdtempSync(join(tmpdir(), 'channels-e2e-')), 'telemetry.sqlite'),
    cacheMs: 0,
  })
  svc = await startService(
    stack,
    {
      EVM_RPC_URL: stack.evm.rpcUrl,
      // The manager claims when the test asks it to (claimAndSettle), not on its timers.
      BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
      BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
      BATCH_SETTLEMENT_WITHDRAW_DELAY_S: '900',
    },
    { telemetry },
  )
}, 120_000)
afterAll(async () => {
  await svc?.stop()
  await telemetry?.close()
  await stack?.stop()
})

/** A payer with the SDK's batch-settlement client scheme alone, behind @x402/fetch. */
function voucherPayer(index: number) {
  const payer = stack.evm.payers[index]
  if (!payer) throw new Error(`no payer ${index}`)
  const reader = createPublicClient({ transport: http(stack.evm.rpcUrl) })
  const scheme = new BatchSettlementEvmScheme(
    toClientEvmSigner(privateKeyToAccount(payer.privateKey), reader),
  )
  const client = new x402Client().register(stack.evm.network, scheme)
  return { scheme, address: payer.address, fetch: wrapFetchWithPayment(fetch, client) }
}

const hash = (paid: typeof fetch, input: string) =>
  paid(`${svc.baseUrl}/hash`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ input }),
  })

describe('prepaid channels through the official client', () => {
  it('offers batch-settlement beside exact on Base, with the configured minimum deposit', async () => {
    const res = await fetch(`${svc.baseUrl}/hash`, { method: 'POST' })
    expect(res.status).toBe(402)
    const required = JSON.parse(
      Buffer.from(res.headers.get('payment-required') ?? '', 'base64').toString(),
    ) as {
      accepts: { scheme: string; network: string; amount: string; extra: Record<string, unknown> }[]
    }
    expect(required.accepts.map((a) => [a.scheme, a.network, a.amount])).toEqual([
      ['exact', 'eip155:8453', '1000'],
      ['batch-settlement', 'eip155:8453', '1000'],
      ['exact', stack.solana.network, '1000'],
    ])
    const channel = required.accepts[1]?.extra ?? {}
    expect(channel.minDeposit).toBe('1000000')
    expect(channel.withdrawDelay).toBe(900)
    expect(typeof channel.receiverAuthorizer).toBe('string')
  })

  it('takes 100 calls for one deposit, at least 95 without a facilitator request; claims and settles exactly 100 × the price; refunds the rest', async () => {
    const payer = voucherPayer(0)
    const before = {
      payer: await stack.evm.usdcBalance(payer.address),
      payTo: await stack.evm.usdcBalance(stack.evm.payTo),
    }
    let quiet = 0
    for (let i = 0; i < 100; i++) {
      const asked = { ...stack.facilitatorRequests }
      const res = await hash(payer.fetch, `call ${i}`)
      expect(res.status).toBe(200)
      const body = (await res.json()) as { ok: boolean; result: { input_bytes: number } }
      expect(body.ok).toBe(true)
      const settled = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')
      expect(settled.success).toBe(true)
      const now = stack.facilitatorRequests
      if (now.verify === asked.verify && now.settle === asked.settle) quiet++
    }
    expect(quiet).toBeGreaterThanOrEqual(95)
    // Telemetry counts every voucher call as a successful paid call, with its revenue.
    const stats = (await (await fetch(`${svc.baseUrl}/stats`)).json()) as { channels: unknown }
    expect(stats.channels).toEqual({
      calls: 100,
      revenue: { atomic: '100000', usdc: '0.1' },
      share_of_calls: 1,
    })
    // One deposit moved into the escrow; nothing reached payTo yet.
    expect(await stack.evm.usdcBalance(payer.address)).toBe(before.payer - DEPOSIT)
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(before.payTo)

    const channels = svc.service.channels
    if (!channels) throw new Error('no channels')
    const done = await channels.manager.claimAndSettle()
    expect(done).toEqual({ claimed: 1, settled: true })
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(before.payTo + 100n * PRICE)

    await payer.scheme.refund(`${svc.baseUrl}/hash`)
    expect(await stack.evm.usdcBalance(payer.address)).toBe(before.payer - 100n * PRICE)
  }, 180_000)
})
