import { randomUUID } from 'node:crypto'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { Redis } from 'ioredis'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channels } from '../src/channels/index.js'
import type { DevStack } from '../src/devnet/stack.js'
import { escrowChannel, type VoucherPayer, voucherPayer } from './helpers/channels.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'

// Issue 38: two instances on one Redis share the channels' state and their manager. A payer's
// channel opened on one instance is paid by voucher on either; exactly one instance holds the
// manager's lease, and its claim moves exactly what both charged; when it stops, the other takes
// the lease and claims the rest. Each run keeps its Redis keys under a prefix of its own.

const PRICE = 1000n
const REDIS_URL = 'redis://127.0.0.1:6379'
const PREFIX = `payload-tools-test:${randomUUID()}`
let stack: DevStack
let redis: Redis
const services: RunningService[] = []

beforeAll(async () => {
  stack = await sharedDevStack()
  redis = new Redis(REDIS_URL)
  // One receiver-authorizer key for both, as production sets it: each offers the same channel.
  const env = {
    EVM_RPC_URL: stack.evm.rpcUrl,
    REDIS_URL,
    BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY: generatePrivateKey(),
    BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
    BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
    BATCH_SETTLEMENT_WITHDRAW_DELAY_S: '900',
  }
  const overrides = {
    rateLimitKeyPrefix: `${PREFIX}:rl`,
    channels: { keyPrefix: PREFIX, leasePollMs: 200, surveyMs: 250 },
  }
  for (let i = 0; i < 2; i++) services.push(await startService(stack, env, overrides))
}, 120_000)
afterAll(async () => {
  for (const svc of services) await svc.stop()
  const keys = [...(await redis.keys(`${PREFIX}*`)), ...(await redis.keys(`mutex:${PREFIX}*`))]
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

const channelsOf = (svc: RunningService): Channels => {
  const channels = svc.service.channels
  if (!channels) throw new Error('no channels')
  return channels
}
const roles = () => services.map((svc) => channelsOf(svc).status().manager.role)
const payTo = () => stack.evm.usdcBalance(stack.evm.payTo)

async function until(what: string, condition: () => boolean | Promise<boolean>, ms = 20_000) {
  const deadline = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A paid /hash call of `payer` on `svc`, answered 200 with the result. */
async function call(payer: VoucherPayer, svc: RunningService, input: string): Promise<void> {
  const res = await payer.fetch(`${svc.baseUrl}/hash`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ input }),
  })
  expect(res.status, await res.clone().text()).toBe(200)
  expect(((await res.json()) as { result: { input_bytes: number } }).result.input_bytes).toBe(
    Buffer.byteLength(input),
  )
}

describe('two instances on Redis sharing one channel', () => {
  let payer: VoucherPayer
  let id: `0x${string}`
  let before: bigint
  let start: bigint

  it('answers a payer alternating between them; one instance holds the lease; its claim moves exactly what both charged', async () => {
    await until('one lease holder', () => roles().includes('holder'))
    payer = voucherPayer(stack, 0)
    before = await payTo()
    start = await stack.evm.usdcBalance(payer.address)
    for (let i = 0; i < 10; i++) await call(payer, services[i % 2] as RunningService, `both ${i}`)
    const [a, b] = services.map((svc) => channelsOf(svc).scheme.getStorage())
    const unpaid = await fetch(`${services[1]?.baseUrl}/hash`, { method: 'POST' })
    const offer = decodePaymentRequiredHeader(
      unpaid.headers.get('payment-required') ?? '',
    ).accepts.find((r) => r.scheme === 'batch-settlement')
    if (!offer) throw new Error('no batch-settlement offer')
    id = computeChannelId(payer.scheme.buildChannelConfig(offer), offer.network)
    // One record, the same on both: ten prices charged.
    const seen = await a?.get(id)
    expect(seen?.chargedCumulativeAmount).toBe(String(10n * PRICE))
    expect(await b?.get(id)).toEqual(seen)
    expect(roles().sort()).toEqual(['holder', 'standby'])
    // The lease lives under this run's prefix (redis-semaphore adds its own `mutex:`).
    expect(await redis.exists(`mutex:${PREFIX}:manager`)).toBe(1)

    const holder = services[roles().indexOf('holder')] as RunningService
    expect(await channelsOf(holder).manager.claimAndSettle()).toEqual({
      claimed: 1,
      settled: true,
    })
    expect(await escrowChannel(stack, id)).toEqual({
      balance: 1_000_000n,
      totalClaimed: 10n * PRICE,
    })
    expect(await payTo()).toBe(before + 10n * PRICE)
  })

  it('gives the lease to the standby when the holder stops; the new holder claims what is charged after; the refund returns the rest', async () => {
    const index = roles().indexOf('holder')
    const [holder] = services.splice(index, 1)
    await holder?.stop()
    const standby = services[0] as RunningService
    const stopped = Date.now()
    await until(
      'the standby takes the lease',
      () => channelsOf(standby).status().manager.role === 'holder',
    )
    expect(Date.now() - stopped).toBeLessThan(10_000)
    for (let i = 0; i < 3; i++) await call(payer, standby, `after ${i}`)
    expect(await channelsOf(standby).manager.claimAndSettle()).toEqual({
      claimed: 1,
      settled: true,
    })
    expect(await escrowChannel(stack, id)).toEqual({
      balance: 1_000_000n,
      totalClaimed: 13n * PRICE,
    })
    expect(await payTo()).toBe(before + 13n * PRICE)
    // The payer's refund on the remaining instance returns exactly the rest.
    await payer.scheme.refund(`${standby.baseUrl}/hash`)
    expect(await stack.evm.usdcBalance(payer.address)).toBe(start - 13n * PRICE)
  })
})
