/**
 * The duplicate-settlement guard's bound and cost (issue 11): the in-memory guard holds at most one
 * window of records whatever the history, and the Redis guard's claim costs about one raw
 * `SET NX PX` round trip (measured against ioredis itself, on the same connection, same run).
 */
import { randomUUID } from 'node:crypto'
import { SYSTEM_REDIS_URL } from '../src/devnet/redis.js'
import {
  createMemoryGuard,
  DUPLICATE_WINDOW_MS,
  type GuardRecord,
  type SettlementGuard,
} from '../src/payment/guard.js'
import { createRedisGuard } from '../src/payment/redis-guard.js'
import { createRedis } from '../src/redis.js'
import { median } from './measure.js'
import { type BenchMode, pick } from './mode.js'

const call = { tool: 'hash', inputDigest: 'ab'.repeat(32) }
const settlement = {
  success: true,
  transaction: `0x${'ab'.repeat(32)}`,
  network: 'eip155:8453' as const,
}

/** The pending record of call `i`. */
const pendingOf = (i: number): GuardRecord => ({
  state: 'pending',
  call,
  payment: `pay:${i}`,
  proof: 'cd'.repeat(32),
})

/** One paid call's guard traffic: claim the payload key and the id key, then record both settled. */
async function paidCall(guard: SettlementGuard, i: number): Promise<void> {
  const keys = [`id:pay_${i}`, `pay:${i}`]
  const pending = pendingOf(i)
  for (const key of keys) await guard.claim(key, pending)
  const settled: GuardRecord = { ...pending, state: 'settled', payer: 'ef'.repeat(32), settlement }
  for (const key of keys) await guard.put(key, settled)
}

/**
 * The memory guard under `calls` paid calls at `perSecond` (simulated clock): records held at the
 * end, the most held at any time, and the heap they take.
 */
async function memoryBound(calls: number, perSecond: number) {
  let t = 0
  const guard = createMemoryGuard(() => t)
  global.gc?.()
  const heapBefore = process.memoryUsage().heapUsed
  let most = 0
  for (let i = 0; i < calls; i++) {
    t = Math.floor((i * 1000) / perSecond)
    await paidCall(guard, i)
    if (guard.size() > most) most = guard.size()
  }
  global.gc?.()
  const heapMiB = (process.memoryUsage().heapUsed - heapBefore) / 2 ** 20
  return { size: guard.size(), most, heapMiB }
}

/** Median µs of `op` over `rounds` runs. */
async function micros(rounds: number, op: (i: number) => Promise<unknown>): Promise<number> {
  const times: number[] = []
  for (let i = 0; i < rounds; i++) {
    const t = performance.now()
    await op(i)
    times.push((performance.now() - t) * 1000)
  }
  return median(times)
}

/** Markdown table of the guard's bound and cost. */
export async function benchGuard(mode: BenchMode): Promise<string> {
  const rows = ['| measure | figure |', '| --- | --- |']
  const perSecond = 1000
  const window = (DUPLICATE_WINDOW_MS / 1000) * perSecond * 2
  const bounds = pick(mode, {
    full: [300_000, 1_000_000],
    quick: [100_000, 300_000],
    smoke: [10_000, 30_000],
  })
  for (const calls of bounds) {
    const m = await memoryBound(calls, perSecond)
    rows.push(
      `| memory guard after ${calls.toLocaleString('en-US')} paid calls at ${perSecond}/s (2 keys each) | ${m.size.toLocaleString('en-US')} records at the end, at most ${m.most.toLocaleString('en-US')} (one window: ${window.toLocaleString('en-US')} + a second's), heap +${m.heapMiB.toFixed(1)} MiB |`,
    )
  }
  const memory = createMemoryGuard()
  rows.push(
    `| memory guard: one paid call's traffic (2 claims + 2 settles), median | ${(await micros(pick(mode, { full: 20_000, quick: 20_000, smoke: 2_000 }), (i) => paidCall(memory, i))).toFixed(1)} µs |`,
  )

  const redis = createRedis({ url: SYSTEM_REDIS_URL, timeoutMs: 500 })
  try {
    const deadline = Date.now() + 5_000
    while (redis.state().status !== 'ready' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
    }
    if (redis.state().status !== 'ready') {
      rows.push(`| Redis guard | skipped: no Redis at ${SYSTEM_REDIS_URL} |`)
      return rows.join('\n')
    }
    const prefix = `bench:guard:${randomUUID()}:`
    const guard = createRedisGuard({ client: redis.client, prefix })
    const rounds = pick(mode, { full: 3_000, quick: 500, smoke: 50 })
    const raw = await micros(rounds, (i) =>
      redis.client.set(`${prefix}raw:${i}`, 'x', 'PX', DUPLICATE_WINDOW_MS, 'NX'),
    )
    const claim = await micros(rounds, (i) => guard.claim(`pay:${i}`, pendingOf(i)))
    const whole = await micros(rounds, (i) => paidCall(guard, rounds + i))
    rows.push(`| raw ioredis \`SET NX PX\` round trip (baseline), median | ${raw.toFixed(0)} µs |`)
    rows.push(
      `| Redis guard claim, median | ${claim.toFixed(0)} µs (${(claim / raw).toFixed(2)}× the raw round trip) |`,
    )
    rows.push(
      `| Redis guard: one paid call's traffic (2 claims + 2 settles), median | ${whole.toFixed(0)} µs (${(whole / raw).toFixed(2)}× one raw round trip) |`,
    )
    const ttl = await redis.client.pttl(`${prefix}pay:0`)
    rows.push(
      `| Redis record lifetime (PTTL right after the run) | ${(ttl / 1000).toFixed(1)} s of ${DUPLICATE_WINDOW_MS / 1000} s: Redis holds at most one window |`,
    )
    const keys = await redis.client.keys(`${prefix}*`)
    if (keys.length > 0) await redis.client.del(...keys)
  } finally {
    await redis.close()
  }
  return rows.join('\n')
}
