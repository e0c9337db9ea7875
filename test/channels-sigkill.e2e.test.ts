import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServiceInstance, type ServiceInstance } from '../src/devnet/instance.js'
import { freePort } from '../src/devnet/ports.js'
import type { DevStack } from '../src/devnet/stack.js'
import { escrowChannel, voucherPayer } from './helpers/channels.js'
import { sharedDevStack } from './helpers/service.js'

// Issue 38: a SIGKILL loses no voucher. The service runs as its own process (src/main.ts) with its
// channels in the file store under its own ./data; a payer's calls are paid by voucher and
// answered, the process is killed with SIGKILL before any claim, and restarted on the same data
// directory with a one-second claim interval: the restarted manager claims on its own, and payTo
// receives exactly the price of every call answered.

const PRICE = 1000n
const CALLS = 8
let dir: string
let stack: DevStack
let first: ServiceInstance
let restarted: ServiceInstance

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'channels-sigkill-'))
  stack = await sharedDevStack()
  const port = await freePort()
  const instance = (name: string, claimSeconds: string) =>
    createServiceInstance({
      name,
      port,
      cwd: dir,
      env: {
        ...stack.serviceEnv,
        DATABASE_URL: join(dir, 'telemetry.sqlite'),
        EVM_RPC_URL: stack.evm.rpcUrl,
        TOOL_WORKERS: '2',
        RATE_LIMIT_POINTS: '1000000',
        BATCH_SETTLEMENT_WITHDRAW_DELAY_S: '900',
        BATCH_SETTLEMENT_CLAIM_INTERVAL_S: claimSeconds,
        BATCH_SETTLEMENT_SETTLE_INTERVAL_S: claimSeconds,
      },
      logFile: join(dir, `${name}.log`),
    })
  // The first claims only in an hour; the one restarted on its data, every second.
  first = instance('first', '3600')
  restarted = instance('restarted', '1')
  await first.start()
}, 240_000)
afterAll(async () => {
  await first?.stop()
  await restarted?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** The batch-settlement offer of the running instance, once its escrow check has passed. */
async function channelOffer(url: string) {
  const deadline = Date.now() + 60_000
  for (;;) {
    const res = await fetch(`${url}/hash`, { method: 'POST' })
    const offer = decodePaymentRequiredHeader(
      res.headers.get('payment-required') ?? '',
    ).accepts.find((a) => a.scheme === 'batch-settlement')
    if (offer) return offer
    if (Date.now() > deadline) throw new Error('batch-settlement not offered within 60 s')
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

const payTo = () => stack.evm.usdcBalance(stack.evm.payTo)

describe('SIGKILL with vouchers unclaimed', () => {
  it('restarts on the same data directory and claims every voucher answered: payTo receives exactly their prices', async () => {
    const payer = voucherPayer(stack, 1)
    const offer = await channelOffer(first.url)
    const id = computeChannelId(payer.scheme.buildChannelConfig(offer), offer.network)
    const before = { payTo: await payTo(), escrow: await escrowChannel(stack, id) }
    let answered = 0
    for (let i = 0; i < CALLS; i++) {
      const res = await payer.fetch(`${first.url}/hash`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ input: `sigkill ${i}` }),
      })
      expect(res.status, await res.clone().text()).toBe(200)
      await res.arrayBuffer()
      answered++
    }
    expect(first.kill('SIGKILL')).toBe(true)
    expect((await first.process()?.exited)?.signal).toBe('SIGKILL')
    // Nothing was claimed: the vouchers live only in the file store now.
    expect(await payTo()).toBe(before.payTo)
    expect(readdirSync(join(dir, 'data', 'channels')).length).toBeGreaterThan(0)

    await restarted.start()
    const deadline = Date.now() + 60_000
    while ((await payTo()) !== before.payTo + BigInt(answered) * PRICE && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
    const log = existsSync(restarted.logFile) ? readFileSync(restarted.logFile, 'utf8') : ''
    expect(await payTo(), log.slice(-3000)).toBe(before.payTo + BigInt(answered) * PRICE)
    expect(await escrowChannel(stack, id)).toEqual({
      balance: before.escrow.balance + 1_000_000n,
      totalClaimed: before.escrow.totalClaimed + BigInt(answered) * PRICE,
    })
    // Stable: later claims move nothing more.
    await new Promise((resolve) => setTimeout(resolve, 3_000))
    expect(await payTo()).toBe(before.payTo + BigInt(answered) * PRICE)

    // The payer's refund on the restarted instance returns exactly the rest.
    const held = await stack.evm.usdcBalance(payer.address)
    await payer.scheme.refund(`${restarted.url}/hash`)
    expect(await stack.evm.usdcBalance(payer.address)).toBe(
      held + 1_000_000n - BigInt(answered) * PRICE,
    )
  }, 300_000)
})
