import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PrivateRedis, startPrivateRedis } from '../devnet/redis.js'
import { createRedis, type SharedRedis } from '../redis.js'
import { GuardUnavailableError } from './errors.js'
import {
  createMemoryGuard,
  DUPLICATE_WINDOW_MS,
  fingerprint,
  idempotencyKey,
  paymentKey,
  type SettlementGuard,
  sameCall,
} from './guard.js'
import { createRedisGuard } from './redis-guard.js'

const call = fingerprint('hash', { input: 'abc', algorithm: 'SHA-256' })
const settlement = { success: true, transaction: '0xtx', network: 'eip155:8453' } as const

describe('keys and fingerprints', () => {
  it('digests the RFC 8785 form of the input: key order and number spelling do not matter', () => {
    expect(fingerprint('hash', { b: 1, a: 'x' })).toEqual(fingerprint('hash', { a: 'x', b: 1.0 }))
    // SHA-256 of the RFC 8785 text {"a":"x","b":1} (sha256sum of those 15 bytes)
    expect(fingerprint('hash', { b: 1, a: 'x' }).inputDigest).toBe(
      'cdab067e9f3beb32d1252cfd63e492592fecbf591b0d08cadb24bb17f3864246',
    )
    expect(sameCall(fingerprint('hash', { a: 1 }), fingerprint('hmac', { a: 1 }))).toBe(false)
    expect(sameCall(fingerprint('hash', { a: 1 }), fingerprint('hash', { a: 2 }))).toBe(false)
  })

  it('keys a payload by SHA-256 of its canonical payload, and an id alone (every rail)', () => {
    const a = paymentKey({ x402Version: 2, accepted: {} as never, payload: { b: 2, a: 1 } })
    const b = paymentKey({ x402Version: 2, accepted: {} as never, payload: { a: 1, b: 2 } })
    expect(a).toBe(b)
    expect(a).toMatch(/^pay:[0-9a-f]{64}$/)
    expect(idempotencyKey('pay_0123456789abcdef')).toBe('id:pay_0123456789abcdef')
  })
})

/** The contract every guard keeps; run on the memory guard and on Redis. */
function contract(name: string, make: () => SettlementGuard) {
  describe(`${name}: the guard contract`, () => {
    const key = () => `pay:${randomUUID()}`

    it('claims a free key once; a second claim sees it pending with its fingerprint', async () => {
      const guard = make()
      const k = key()
      expect(await guard.claim(k, call)).toEqual({ state: 'claimed' })
      expect(await guard.claim(k, call)).toEqual({ state: 'pending', call })
    })

    it('frees a released key at once', async () => {
      const guard = make()
      const k = key()
      await guard.claim(k, call)
      await guard.release(k)
      expect(await guard.claim(k, call)).toEqual({ state: 'claimed' })
    })

    it('keeps a settled call with its SettleResponse, and a spent payment', async () => {
      const guard = make()
      const [s, x] = [key(), key()]
      await guard.claim(s, call)
      await guard.settle(s, call, settlement)
      expect(await guard.claim(s, call)).toEqual({ state: 'settled', call, settlement })
      await guard.claim(x, call)
      await guard.spend(x, call)
      expect(await guard.claim(x, call)).toEqual({ state: 'spent', call })
    })

    it('lets exactly one of 20 concurrent claims of a key through', async () => {
      const guard = make()
      const k = key()
      const answers = await Promise.all(Array.from({ length: 20 }, () => guard.claim(k, call)))
      expect(answers.filter((a) => a.state === 'claimed')).toHaveLength(1)
      expect(answers.filter((a) => a.state === 'pending')).toHaveLength(19)
    })
  })
}

contract('memory', () => createMemoryGuard())

describe('memory guard: the window and its bound', () => {
  it('holds a record for exactly the duplicate window', async () => {
    let t = 1_000_000
    const guard = createMemoryGuard(() => t)
    await guard.claim('k', call)
    await guard.settle('k', call, settlement)
    t += DUPLICATE_WINDOW_MS - 1
    expect((await guard.claim('k', call)).state).toBe('settled')
    t += 1
    expect(await guard.claim('k', call)).toEqual({ state: 'claimed' })
  })

  it('holds no more than one window of records', async () => {
    let t = 0
    const guard = createMemoryGuard(() => t)
    for (let i = 0; i < 1000; i++) {
      t += 1000
      await guard.claim(`k${i}`, call)
      await guard.settle(`k${i}`, call, settlement)
    }
    // One claim a second: the window keeps the last 120 (plus up to a second before a sweep).
    expect(guard.size()).toBeLessThanOrEqual(DUPLICATE_WINDOW_MS / 1000 + 1)
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

  it('stores the fingerprint and SettleResponse only, and sets the window as the key TTL', async () => {
    const guard = createRedisGuard({ client: redis.client, prefix })
    await guard.claim('pay:ttl', call)
    await guard.settle('pay:ttl', call, settlement)
    const ttl = await redis.client.pttl(`${prefix}pay:ttl`)
    expect(ttl).toBeGreaterThan(DUPLICATE_WINDOW_MS - 5_000)
    expect(ttl).toBeLessThanOrEqual(DUPLICATE_WINDOW_MS)
    expect(JSON.parse((await redis.client.get(`${prefix}pay:ttl`)) ?? '')).toEqual({
      state: 'settled',
      call,
      settlement,
    })
  })

  it('shares claims between two connections (two instances)', async () => {
    const other = createRedis({ url: server.url, timeoutMs: 300 })
    try {
      const a = createRedisGuard({ client: redis.client, prefix })
      const b = createRedisGuard({ client: other.client, prefix })
      expect(await a.claim('pay:shared', call)).toEqual({ state: 'claimed' })
      await a.settle('pay:shared', call, settlement)
      expect(await b.claim('pay:shared', call)).toEqual({ state: 'settled', call, settlement })
    } finally {
      await other.close()
    }
  })

  it('fails closed within the timeout while Redis is down, and works again after', async () => {
    const guard = createRedisGuard({ client: redis.client, prefix })
    await server.stop()
    // Rejected while Redis is still down: a claim that waited for it would time the test out.
    await expect(guard.claim('pay:down', call)).rejects.toBeInstanceOf(GuardUnavailableError)
    await server.start()
    const deadline = Date.now() + 10_000
    while (redis.state().status !== 'ready' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20))
    }
    expect(await guard.claim('pay:down', call)).toEqual({ state: 'claimed' })
  })
})
