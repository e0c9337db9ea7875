import { randomUUID } from 'node:crypto'
import { Hono } from 'hono'
import { toHttpFailure } from '../../src/http/failures.js'
import {
  createRateLimit,
  type RateLimit,
  type RateLimitOptions,
} from '../../src/http/rate-limit.js'
import { settledCredit } from '../../src/payment/quota.js'

// The limiter middleware on a minimal app, for its tests in memory (src/http/rate-limit.test.ts)
// and on Redis (src/http/rate-limit.system.test.ts).

/**
 * A stand-in app whose `/paid` route uses the quota as the payment gate does: a "good"
 * PAYMENT-SIGNATURE settles (its point given back, and the credit of a settled payment for its
 * unpaid request of one point), any other is refused before verify (a point first), and
 * none is the 402 the middleware counts. `/mcp` charges the points its body names.
 */
function appWith(limit: RateLimit): Hono {
  const app = new Hono()
  app.use(limit.middleware)
  app.get('/health', (c) => c.text('ok'))
  app.get('/stats', (c) => c.json({ ok: true }))
  app.post('/paid', async (c) => {
    const signature = c.req.header('PAYMENT-SIGNATURE')
    const quota = limit.quotaOf(c)
    if (signature === 'good') {
      quota.refund(settledCredit(1))
      return c.json({ ok: true }, 200)
    }
    if (signature !== undefined) {
      try {
        await quota.charge()
      } catch (error) {
        const failure = toHttpFailure(error)
        return c.json(failure.body, failure.status, failure.headers)
      }
    }
    return c.json({ ok: false, code: 'invalid_payment' }, 402)
  })
  app.post('/mcp', async (c) => {
    try {
      await limit.quotaOf(c).charge(Number(await c.req.text()))
    } catch (error) {
      const failure = toHttpFailure(error)
      return c.json(failure.body, failure.status, failure.headers)
    }
    return c.json({ jsonrpc: '2.0', id: 1, result: {} })
  })
  return app
}

export function limitedApp(options: Partial<RateLimitOptions> = {}) {
  const limit = createRateLimit({
    points: 3,
    durationSeconds: 60,
    trustProxyHops: 0,
    keyPrefix: `test:${randomUUID()}`,
    paidPaths: new Set(['/paid']),
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
