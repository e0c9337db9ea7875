import { randomUUID } from 'node:crypto'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { waitFor } from '../devnet/child.js'
import { type PrivateRedis, SYSTEM_REDIS_URL, startPrivateRedis } from '../devnet/redis.js'
import { createRedis, type SharedRedis } from '../redis.js'
import { createRateLimit, type RateLimit, type RateLimitOptions } from './rate-limit.js'

// The limiter middleware on a minimal app: in memory, on the system Redis (a key prefix of its
// own per test), and on a Redis that is down (the insurance limiter takes over).

/** A stand-in app: `/paid` settles when PAYMENT-SIGNATURE is "good" and answers 402 otherwise. */
function appWith(limit: RateLimit): Hono {
  const app = new Hono()
  app.use(limit.middleware)
  app.get('/health', (c) => c.text('ok'))
  app.get('/stats', (c) => c.json({ ok: true }))
  app.post('/paid', (c) => {
    if (c.req.header('PAYMENT-SIGNATURE') !== 'good') {
      return c.json({ ok: false, code: 'invalid_payment' }, 402)
    }
    limit.settled(c.req.raw)
    return c.json({ ok: true }, 200)
  })
  app.post('/mcp', async (c) => {
    const text = await c.req.text()
    if (text.includes('"good"')) limit.settled(c.req.raw)
    return c.json({ jsonrpc: '2.0', id: 1, result: {} })
  })
  return app
}

function setup(options: Partial<RateLimitOptions> = {}) {
  const limit = createRateLimit({
    points: 3,
    durationSeconds: 60,
    trustProxyHops: 0,
    keyPrefix: `test:${randomUUID()}`,
    ...options,
  })
  if (!limit) throw new Error('limit disabled')
  const app = appWith(limit)
  /** A request from `ip`, as @hono/node-server hands it to the app. */
  const from = async (ip: string, path = '/stats', init: RequestInit = {}) =>
    app.request(path, init, { incoming: { socket: { remoteAddress: ip } } })
  const statuses = async (n: number, send: () => Promise<Response>) => {
    const out: number[] = []
    for (let i = 0; i < n; i++) out.push((await send()).status)
    return out
  }
  return { app, from, statuses }
}

const mcpCall = (payment?: string) =>
  JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'payload_hash',
      arguments: {},
      ...(payment ? { _meta: { 'x402/payment': { token: payment } } } : {}),
    },
  })

describe('createRateLimit (in memory)', () => {
  it('is off with 0 points', () => {
    expect(createRateLimit({ points: 0, durationSeconds: 60, trustProxyHops: 0 })).toBeUndefined()
  })

  it('answers the request beyond the limit 429 with the envelope and the IETF headers', async () => {
    const { from, statuses } = setup()
    expect(await statuses(3, () => from('198.51.100.7'))).toEqual([200, 200, 200])
    const res = await from('198.51.100.7')
    expect(res.status).toBe(429)
    expect(await res.json()).toEqual({
      ok: false,
      error:
        'Too many unpaid requests: 3 per 60 s per client. Paid calls are not limited. Retry after Retry-After seconds.',
      code: 'rate_limited',
    })
    const retryAfter = Number(res.headers.get('retry-after'))
    expect(retryAfter).toBeGreaterThanOrEqual(59)
    expect(retryAfter).toBeLessThanOrEqual(60)
    expect(Object.fromEntries(res.headers)).toEqual({
      'content-type': 'application/json',
      'cache-control': 'no-store',
      'retry-after': String(retryAfter),
      'ratelimit-policy': '"free";q=3;w=60',
      ratelimit: `"free";r=0;t=${retryAfter}`,
    })
  })

  it('counts each client apart, and an IPv6 /64 as one client', async () => {
    const { from, statuses } = setup()
    expect(await statuses(4, () => from('198.51.100.7'))).toEqual([200, 200, 200, 429])
    expect((await from('198.51.100.8')).status).toBe(200)
    expect((await from('2001:db8::1')).status).toBe(200)
    expect((await from('2001:db8::2')).status).toBe(200)
    expect((await from('2001:db8::3:4')).status).toBe(200)
    expect((await from('2001:db8::ffff')).status).toBe(429)
    expect((await from('2001:db8:0:1::1')).status).toBe(200)
  })

  it('never counts /health', async () => {
    const { from, statuses } = setup()
    expect(await statuses(10, () => from('198.51.100.7', '/health'))).toEqual(Array(10).fill(200))
    expect(await statuses(4, () => from('198.51.100.7'))).toEqual([200, 200, 200, 429])
    expect((await from('198.51.100.7', '/health')).status).toBe(200)
  })

  it('counts unpaid POSTs (the 402s) and never refuses a paid one, even over the limit', async () => {
    const { from, statuses } = setup()
    const unpaid = () => from('198.51.100.7', '/paid', { method: 'POST' })
    const paid = () =>
      from('198.51.100.7', '/paid', { method: 'POST', headers: { 'PAYMENT-SIGNATURE': 'good' } })
    expect(await statuses(3, unpaid)).toEqual([402, 402, 402])
    expect((await unpaid()).status).toBe(429)
    expect(await statuses(5, paid)).toEqual(Array(5).fill(200))
  })

  it('charges a payment that did not settle a point after the answer', async () => {
    const { from, statuses } = setup()
    const junk = () =>
      from('198.51.100.7', '/paid', { method: 'POST', headers: { 'PAYMENT-SIGNATURE': 'junk' } })
    // Junk is answered (a payment is never refused up front), but each one costs a point.
    expect(await statuses(3, junk)).toEqual([402, 402, 402])
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect((await from('198.51.100.7')).status).toBe(429)
  })

  it('counts MCP requests without a payment, and charges MCP payments that did not settle', async () => {
    const { from, statuses } = setup()
    const mcp = (ip: string, body: string) =>
      from(ip, '/mcp', { method: 'POST', body, headers: { 'Content-Type': 'application/json' } })
    const list = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
    expect(await statuses(4, () => mcp('198.51.100.7', list))).toEqual([200, 200, 200, 429])
    expect(await statuses(4, () => mcp('198.51.100.7', mcpCall()))).toEqual(Array(4).fill(429))
    // A payment in _meta: not refused, even over the limit; settled: free of charge.
    expect(await statuses(5, () => mcp('198.51.100.7', mcpCall('good')))).toEqual(
      Array(5).fill(200),
    )
    // "x402/payment" in an argument is not a payment.
    const fake = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'payload_hash', arguments: { input: '"x402/payment"' } },
    })
    expect((await mcp('198.51.100.7', fake)).status).toBe(429)

    expect(await statuses(3, () => mcp('198.51.100.8', mcpCall('junk')))).toEqual([200, 200, 200])
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect((await mcp('198.51.100.8', list)).status).toBe(429)
  })

  it('reads the client from X-Forwarded-For only through the trusted hops', async () => {
    const behindProxy = setup({ trustProxyHops: 1 })
    const via = (xff: string) =>
      behindProxy.from('127.0.0.1', '/stats', { headers: { 'X-Forwarded-For': xff } })
    // The client's own entries (left of nginx's) do not change its bucket.
    expect(await behindProxy.statuses(3, () => via(`${randomUUID()}, 203.0.113.9`))).toEqual([
      200, 200, 200,
    ])
    expect((await via('1.1.1.1, 203.0.113.9')).status).toBe(429)
    expect((await via('203.0.113.10')).status).toBe(200)

    const direct = setup({ trustProxyHops: 0 })
    const spoof = (i: number) =>
      direct.from('198.51.100.7', '/stats', { headers: { 'X-Forwarded-For': `10.0.0.${i}` } })
    expect([
      (await spoof(1)).status,
      (await spoof(2)).status,
      (await spoof(3)).status,
      (await spoof(4)).status,
    ]).toEqual([200, 200, 200, 429])
  })
})

describe('createRateLimit on Redis', () => {
  let redis: SharedRedis
  let closed: SharedRedis
  let server: PrivateRedis
  let outage: SharedRedis

  beforeAll(async () => {
    redis = createRedis({ url: SYSTEM_REDIS_URL, timeoutMs: 500 })
    // Nothing listens on port 1. Its timeout outlasts the test's: a request that waited for
    // Redis would fail the test by timing out, whatever the machine's speed.
    closed = createRedis({ url: 'redis://127.0.0.1:1', timeoutMs: 600_000 })
    server = await startPrivateRedis()
    outage = createRedis({ url: server.url, timeoutMs: 200 })
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
    const a = setup({ redis, keyPrefix })
    const b = setup({ redis, keyPrefix })
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
    const a = setup({ redis: closed, keyPrefix })
    const b = setup({ redis: closed, keyPrefix })
    expect(await a.statuses(4, () => a.from('198.51.100.7'))).toEqual([200, 200, 200, 429])
    // The other instance has its own count while Redis is down.
    expect(await b.statuses(4, () => b.from('198.51.100.7'))).toEqual([200, 200, 200, 429])
  })

  it('keeps limiting through an outage and goes back to the shared count after it', async () => {
    await until(outage, 'ready')
    const keyPrefix = `test:${randomUUID()}`
    const { from } = setup({ redis: outage, keyPrefix })
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
