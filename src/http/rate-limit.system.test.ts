import { randomUUID } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { limitedApp } from '../../test/helpers/rate-limit-app.js'
import { waitFor } from '../devnet/child.js'
import { type PrivateRedis, SYSTEM_REDIS_URL, startPrivateRedis } from '../devnet/redis.js'
import { createRedis, type SharedRedis } from '../redis.js'

// The limiter middleware on the system Redis (a key prefix of its own per test), and on a Redis
// of its own that it stops (the insurance limiter takes over). In memory: rate-limit.test.ts.

describe('createRateLimit on Redis', () => {
  let redis: SharedRedis
  let closed: SharedRedis
  let server: PrivateRedis
  let outage: SharedRedis

  beforeAll(async () => {
    // Generous bounds: these tests are about sharing and outages, not about a slow Redis.
    redis = createRedis({ url: SYSTEM_REDIS_URL, timeoutMs: 10_000 })
    // Nothing listens on port 1. Its timeout outlasts the test's: a request that waited for
    // Redis would fail the test by timing out, whatever the machine's speed.
    closed = createRedis({ url: 'redis://127.0.0.1:1', timeoutMs: 600_000 })
    server = await startPrivateRedis()
    // While it is down, commands are refused at once (no offline queue), whatever the bound.
    outage = createRedis({ url: server.url, timeoutMs: 10_000 })
  })
  afterAll(async () => {
    await Promise.all([redis?.close(), closed?.close(), outage?.close()])
    await server?.destroy()
  })

  /** Resolves once `redis` reports `status` (its connection events are asynchronous). */
  const until = (redis: SharedRedis, status: 'ready' | 'down') =>
    waitFor(`redis ${status}`, async () => redis.state().status === status, {
      timeoutMs: 10_000,
      intervalMs: 20,
    })

  it('shares one count between instances on the same Redis', async () => {
    await until(redis, 'ready')
    const keyPrefix = `test:${randomUUID()}`
    const a = limitedApp({ redis, keyPrefix })
    const b = limitedApp({ redis, keyPrefix })
    expect((await a.from('198.51.100.7')).status).toBe(200)
    expect((await b.from('198.51.100.7')).status).toBe(200)
    expect((await a.from('198.51.100.7')).status).toBe(200)
    const refused = await b.from('198.51.100.7')
    expect(refused.status).toBe(429)
    expect(refused.headers.get('ratelimit-policy')).toBe('"free";q=3;w=60')
    expect((await a.from('198.51.100.7')).status).toBe(429)
    expect((await a.from('198.51.100.8')).status).toBe(200)
    expect(await redis.client.get(`${keyPrefix}:198.51.100.7`)).toBe('5')
    // Once refused, an instance refuses that client from memory: Redis is not asked again.
    expect((await a.from('198.51.100.7')).status).toBe(429)
    expect((await b.from('198.51.100.7')).status).toBe(429)
    expect(await redis.client.get(`${keyPrefix}:198.51.100.7`)).toBe('5')
  })

  it('counts in memory, per instance, while Redis cannot be reached', async () => {
    const keyPrefix = `test:${randomUUID()}`
    const a = limitedApp({ redis: closed, keyPrefix })
    const b = limitedApp({ redis: closed, keyPrefix })
    expect(await a.statuses(4, () => a.from('198.51.100.7'))).toEqual([200, 200, 200, 429])
    // The other instance has its own count while Redis is down.
    expect(await b.statuses(4, () => b.from('198.51.100.7'))).toEqual([200, 200, 200, 429])
  })

  it('keeps limiting through an outage and goes back to the shared count after it', async () => {
    await until(outage, 'ready')
    const keyPrefix = `test:${randomUUID()}`
    const { from } = limitedApp({ redis: outage, keyPrefix })
    expect((await from('198.51.100.7')).status).toBe(200)
    await server.stop()
    await until(outage, 'down')
    // The insurance count starts afresh: free work keeps being answered, within a limit.
    const during: number[] = []
    for (let i = 0; i < 4; i++) during.push((await from('198.51.100.7')).status)
    expect(during).toEqual([200, 200, 200, 429])
    await server.start()
    await until(outage, 'ready')
    // The restarted server is empty (persistence off): the shared count starts afresh.
    expect((await from('198.51.100.9')).status).toBe(200)
    expect(await outage.client.get(`${keyPrefix}:198.51.100.9`)).toBe('1')
  })
})
