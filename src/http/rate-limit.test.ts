import { randomUUID } from 'node:crypto'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { limitedApp } from '../../test/helpers/rate-limit-app.js'
import { createRateLimit } from './rate-limit.js'
import { requestIds } from './request-id.js'

// The limiter middleware on a minimal app, in memory. On Redis: rate-limit.system.test.ts.

describe('createRateLimit (in memory)', () => {
  it('is off with 0 points', () => {
    expect(createRateLimit({ points: 0, durationSeconds: 60, trustProxyHops: 0 })).toBeUndefined()
  })

  it('answers the request beyond the limit 429 with the envelope and the IETF headers', async () => {
    const { from, statuses } = limitedApp()
    expect(await statuses(3, () => from('198.51.100.7'))).toEqual([200, 200, 200])
    const res = await from('198.51.100.7')
    expect(res.status).toBe(429)
    expect(await res.json()).toEqual({
      ok: false,
      error:
        'Too many unpaid requests: 3 per 60 s per client. Paying clients are never limited by their paid calls. Retry after Retry-After seconds.',
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

  it("adds the request's id to the envelope and reports each refusal", async () => {
    let refused = 0
    const limit = createRateLimit({
      points: 1,
      durationSeconds: 60,
      trustProxyHops: 0,
      keyPrefix: `test:${randomUUID()}`,
      onRefused: () => refused++,
    })
    if (!limit) throw new Error('limit disabled')
    const app = new Hono()
    app.use(requestIds())
    app.use(limit.middleware)
    app.get('/stats', (c) => c.json({ ok: true }))
    const send = (id: string) =>
      app.request(
        '/stats',
        { headers: { 'X-Request-Id': id } },
        { incoming: { socket: { remoteAddress: '198.51.100.9' } } },
      )
    expect((await send('r-1')).status).toBe(200)
    for (const id of ['r-2', 'r-3']) {
      const res = await send(id)
      expect(res.status).toBe(429)
      expect(res.headers.get('x-request-id')).toBe(id)
      expect(await res.json()).toEqual({
        ok: false,
        error:
          'Too many unpaid requests: 1 per 60 s per client. Paying clients are never limited by their paid calls. Retry after Retry-After seconds.',
        code: 'rate_limited',
        request_id: id,
      })
    }
    expect(refused).toBe(2)
  })

  it('counts each client apart, and an IPv6 /64 as one client', async () => {
    const { from, statuses } = limitedApp()
    expect(await statuses(4, () => from('198.51.100.7'))).toEqual([200, 200, 200, 429])
    expect((await from('198.51.100.8')).status).toBe(200)
    expect((await from('2001:db8::1')).status).toBe(200)
    expect((await from('2001:db8::2')).status).toBe(200)
    expect((await from('2001:db8::3:4')).status).toBe(200)
    expect((await from('2001:db8::ffff')).status).toBe(429)
    expect((await from('2001:db8:0:1::1')).status).toBe(200)
  })

  it('never counts /health', async () => {
    const { from, statuses } = limitedApp()
    expect(await statuses(10, () => from('198.51.100.7', '/health'))).toEqual(Array(10).fill(200))
    expect(await statuses(4, () => from('198.51.100.7'))).toEqual([200, 200, 200, 429])
    expect((await from('198.51.100.7', '/health')).status).toBe(200)
  })

  it('counts unpaid POSTs (the 402s) and never refuses a fresh payment, even over the limit', async () => {
    const { from, statuses } = limitedApp()
    const unpaid = () => from('198.51.100.7', '/paid', { method: 'POST' })
    const paid = () =>
      from('198.51.100.7', '/paid', { method: 'POST', headers: { 'PAYMENT-SIGNATURE': 'good' } })
    expect(await statuses(3, unpaid)).toEqual([402, 402, 402])
    expect((await unpaid()).status).toBe(429)
    expect(await statuses(5, paid)).toEqual(Array(5).fill(200))
  })

  it('gives back two points for each settled payment: a paying client keeps its free quota', async () => {
    const { from } = limitedApp()
    // The x402 flow: the 402, then the paid request, 50 times over a limit of 3.
    for (let i = 0; i < 50; i++) {
      expect((await from('198.51.100.7', '/paid', { method: 'POST' })).status).toBe(402)
      const paid = { method: 'POST', headers: { 'PAYMENT-SIGNATURE': 'good' } }
      expect((await from('198.51.100.7', '/paid', paid)).status).toBe(200)
      await new Promise((resolve) => setImmediate(resolve))
    }
    expect((await from('198.51.100.7')).status).toBe(200)
  })

  it('charges a payment refused before verify a point first: over the limit, 429 instead', async () => {
    const { from, statuses } = limitedApp()
    const junk = () =>
      from('198.51.100.7', '/paid', { method: 'POST', headers: { 'PAYMENT-SIGNATURE': 'junk' } })
    expect(await statuses(4, junk)).toEqual([402, 402, 402, 429])
    expect((await from('198.51.100.7')).status).toBe(429)
    // A PAYMENT-SIGNATURE outside a paid route buys nothing: it is an unpaid request.
    const other = () => from('198.51.100.8', '/stats', { headers: { 'PAYMENT-SIGNATURE': 'good' } })
    expect(await statuses(4, other)).toEqual([200, 200, 200, 429])
  })

  it('leaves POST /mcp to the MCP endpoint, which charges a point per message', async () => {
    const { from } = limitedApp()
    const mcp = (points: number) =>
      from('198.51.100.7', '/mcp', { method: 'POST', body: String(points) })
    expect((await mcp(2)).status).toBe(200)
    const refused = await mcp(2)
    expect(refused.status).toBe(429)
    expect(refused.headers.get('retry-after')).toMatch(/^\d+$/)
    expect((await from('198.51.100.7')).status).toBe(429)
    // Another client: one message of 3 left after two.
    expect((await from('198.51.100.8', '/mcp', { method: 'POST', body: '2' })).status).toBe(200)
    expect((await from('198.51.100.8')).status).toBe(200)
  })

  it('reads the client from X-Forwarded-For only through the trusted hops', async () => {
    const behindProxy = limitedApp({ trustProxyHops: 1 })
    const via = (xff: string) =>
      behindProxy.from('127.0.0.1', '/stats', { headers: { 'X-Forwarded-For': xff } })
    // The client's own entries (left of nginx's) do not change its bucket.
    expect(await behindProxy.statuses(3, () => via(`${randomUUID()}, 203.0.113.9`))).toEqual([
      200, 200, 200,
    ])
    expect((await via('1.1.1.1, 203.0.113.9')).status).toBe(429)
    expect((await via('203.0.113.10')).status).toBe(200)

    const direct = limitedApp({ trustProxyHops: 0 })
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
