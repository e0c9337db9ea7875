import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PrivateRedis, startPrivateRedis } from '../devnet/redis.js'
import { createRedis, type SharedRedis } from '../redis.js'
import { GuardUnavailableError } from './errors.js'
import {
  createMemoryGuard,
  DUPLICATE_WINDOW_MS,
  type GuardRecord,
  idempotencyKey,
  type SettlementGuard,
  sameCall,
} from './guard.js'
import { createRedisGuard } from './redis-guard.js'

const call = { tool: 'hash', inputDigest: 'ab'.repeat(32) }
const settlement = { success: true, transaction: '0xtx', network: 'eip155:8453' } as const
const pending: GuardRecord = { state: 'pending', call, payment: 'pay:p1', proof: 'proof1' }
const settled: GuardRecord = { ...pending, state: 'settled', payer: 'payer1', settlement }
const unknown: GuardRecord = { ...pending, state: 'unknown', payer: 'payer1' }

describe('keys', () => {
  it('keys a payment-identifier id alone (every rail; the record names its payment and payer)', () => {
    expect(idempotencyKey('pay_0123456789abcdef')).toBe('id:pay_0123456789abcdef')
    expect(sameCall(call, { ...call })).toBe(true)
    expect(sameCall(call, { ...call, tool: 'hmac' })).toBe(false)
    expect(sameCall(call, { ...call, inputDigest: 'cd'.repeat(32) })).toBe(false)
  })
})

/** The contract every guard keeps; run on the memory guard and on Redis. */
function contract(name: string, make: () => SettlementGuard) {
  describe(`${name}: the guard contract`, () => {
    const key = () => `pay:${randomUUID()}`

    it('claims a free key once; a second claim sees the record that holds it', async () => {
      const guard = make()
      const k = key()
      expect(await guard.claim(k, pending)).toEqual({ state: 'claimed' })
      expect(await guard.claim(k, { ...pending, proof: 'other' })).toEqual({
        state: 'held',
        record: pending,
      })
    })

    it('reads what holds a key without claiming it', async () => {
      const guard = make()
      const k = key()
      expect(await guard.peek(k)).toBeUndefined()
      expect(await guard.claim(k, pending)).toEqual({ state: 'claimed' })
      expect(await guard.peek(k)).toEqual(pending)
      await guard.put(k, settled)
      expect(await guard.peek(k)).toEqual(settled)
      await guard.release(k)
      expect(await guard.peek(k)).toBeUndefined()
      expect(await guard.claim(k, pending)).toEqual({ state: 'claimed' })
    })

    it('frees a released key at once', async () => {
      const guard = make()
      const k = key()
      await guard.claim(k, pending)
      await guard.release(k)
      expect(await guard.claim(k, pending)).toEqual({ state: 'claimed' })
    })

    it("keeps a settled call with its SettleResponse and its payer's keyed hash", async () => {
      const guard = make()
      const k = key()
      await guard.claim(k, pending)
      await guard.put(k, settled)
      expect(await guard.claim(k, pending)).toEqual({ state: 'held', record: settled })
    })

    it('lets exactly one of 20 concurrent claims of a key through', async () => {
      const guard = make()
      const k = key()
      const answers = await Promise.all(Array.from({ length: 20 }, () => guard.claim(k, pending)))
      expect(answers.filter((a) => a.state === 'claimed')).toHaveLength(1)
      expect(answers.filter((a) => a.state === 'held')).toHaveLength(19)
    })

    it('counts the replays of a settled payment, atomically', async () => {
      const guard = make()
      const payment = key()
      const counts = await Promise.all(Array.from({ length: 10 }, () => guard.countReplay(payment)))
      expect(counts.sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
      expect(await guard.countReplay(key())).toBe(1)
    })

    it('hands an unknown settlement back to exactly one retry, and only for its proof', async () => {
      const guard = make()
      const k = key()
      await guard.claim(k, pending)
      await guard.put(k, unknown)
      expect(await guard.reclaim(k, 'not the proof', pending)).toBe(false)
      const takes = await Promise.all(
        Array.from({ length: 10 }, () => guard.reclaim(k, unknown.proof, pending)),
      )
      expect(takes.filter(Boolean)).toHaveLength(1)
      expect(await guard.claim(k, pending)).toEqual({ state: 'held', record: pending })
      // A settled record is never taken back.
      await guard.put(k, settled)
      expect(await guard.reclaim(k, settled.proof, pending)).toBe(false)
    })

    it('keeps when the payer of a settlement in doubt may retry (retryAt, judged), also through a retry that takes it back', async () => {
      const guard = make()
      const k = key()
      const doubt: GuardRecord = { ...unknown, retryAt: 1_700_000_005_000, judged: true }
      await guard.claim(k, pending)
      await guard.put(k, doubt)
      expect(await guard.claim(k, pending)).toEqual({ state: 'held', record: doubt })
      const taken: GuardRecord = { ...doubt, state: 'pending' }
      expect(await guard.reclaim(k, doubt.proof, taken)).toBe(true)
      expect(await guard.claim(k, pending)).toEqual({ state: 'held', record: taken })
    })
  })
}

contract('memory', () => createMemoryGuard())

describe('memory guard: the window and its bound', () => {
  it('holds a record, and a replay count, for exactly the duplicate window', async () => {
    let t = 1_000_000
    const guard = createMemoryGuard(() => t)
    await guard.claim('k', pending)
    await guard.put('k', settled)
    expect(await guard.countReplay('pay:p1')).toBe(1)
    t += DUPLICATE_WINDOW_MS - 1
    expect(await guard.peek('k')).toEqual(settled)
    expect(await guard.claim('k', pending)).toEqual({ state: 'held', record: settled })
    expect(await guard.countReplay('pay:p1')).toBe(2)
    t += 1
    expect(await guard.peek('k')).toBeUndefined()
    expect(await guard.claim('k', pending)).toEqual({ state: 'claimed' })
    expect(await guard.countReplay('pay:p1')).toBe(1)
  })

  it('holds no more than one window of records', async () => {
    let t = 0
    const guard = createMemoryGuard(() => t)
    for (let i = 0; i < 1000; i++) {
      t += 1000
      await guard.claim(`k${i}`, pending)
      await guard.put(`k${i}`, settled)
      await guard.countReplay(`pay:${i}`)
    }
    // One call a second: the window keeps the last 120 records and counts (plus up to a second
    // before a sweep).
    expect(guard.size()).toBeLessThanOrEqual(2 * (DUPLICATE_WINDOW_MS / 1000 + 1))
  })
})

describe('Redis guard', () => {
  let server: PrivateRedis
  let redis: SharedRedis
  const prefix = `test:guard:${randomUUID()}:`

  beforeAll(async () => {
    server = await startPrivateRedis()
    redis = createRedis({ url: server.url, timeoutMs: 300 })
    const deadline = Date.now() + 10_000
    while (redis.state().status !== 'ready' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
    }
  })
  afterAll(async () => {
    await redis?.close()
    await server?.destroy()
  })

  contract('redis', () => createRedisGuard({ client: redis.client, prefix }))

  it('stores the record only (no input, result or address), with the window as the key TTL', async () => {
    const guard = createRedisGuard({ client: redis.client, prefix })
    await guard.claim('pay:ttl', pending)
    await guard.put('pay:ttl', settled)
    await guard.countReplay('pay:ttl')
    for (const k of ['pay:ttl', 'replays:pay:ttl']) {
      const ttl = await redis.client.pttl(`${prefix}${k}`)
      expect(ttl).toBeGreaterThan(DUPLICATE_WINDOW_MS - 5_000)
      expect(ttl).toBeLessThanOrEqual(DUPLICATE_WINDOW_MS)
    }
    expect(JSON.parse((await redis.client.get(`${prefix}pay:ttl`)) ?? '')).toEqual(settled)
  })

  it('shares claims between two connections (two instances)', async () => {
    const other = createRedis({ url: server.url, timeoutMs: 300 })
    try {
      const a = createRedisGuard({ client: redis.client, prefix })
      const b = createRedisGuard({ client: other.client, prefix })
      expect(await a.claim('pay:shared', pending)).toEqual({ state: 'claimed' })
      await a.put('pay:shared', settled)
      expect(await b.claim('pay:shared', pending)).toEqual({ state: 'held', record: settled })
    } finally {
      await other.close()
    }
  })

  it('fails closed within the timeout while Redis is down, and works again after', async () => {
    const guard = createRedisGuard({ client: redis.client, prefix })
    await server.stop()
    // Rejected while Redis is still down: a claim that waited for it would time the test out.
    await expect(guard.claim('pay:down', pending)).rejects.toBeInstanceOf(GuardUnavailableError)
    await expect(guard.countReplay('pay:down')).rejects.toBeInstanceOf(GuardUnavailableError)
    await expect(guard.peek('pay:down')).rejects.toBeInstanceOf(GuardUnavailableError)
    await expect(guard.reclaim('pay:down', 'p', pending)).rejects.toBeInstanceOf(
      GuardUnavailableError,
    )
    await server.start()
    const deadline = Date.now() + 10_000
    while (redis.state().status !== 'ready' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(await guard.claim('pay:down', pending)).toEqual({ state: 'claimed' })
  })
})
