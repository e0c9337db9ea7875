import { createHash, timingSafeEqual } from 'node:crypto'
import { type Context, Hono, type MiddlewareHandler } from 'hono'
import type { Metrics } from './metrics.js'

/**
 * Whether an `Authorization` header carries `Bearer <token>` (RFC 6750; the scheme is
 * case-insensitive). The comparison takes the same time whatever the given token: both sides are
 * hashed to 32 bytes, then compared with `crypto.timingSafeEqual`.
 *
 * Not hono's `bearerAuth`: it answers a wrong or missing token with 401 or 400 and a
 * `WWW-Authenticate` challenge, which tells anyone that the path exists; `/metrics` must answer
 * exactly as an unknown path does.
 *
 * @example bearerMatches('Bearer s3cret', digestOf('s3cret')) // true
 */
export function bearerMatches(header: string | undefined, expected: Buffer): boolean {
  const match = header === undefined ? null : /^Bearer +(\S+) *$/i.exec(header)
  if (!match) return false
  return timingSafeEqual(digestOf(match[1] as string), expected)
}

/** SHA-256 of a token, for {@link bearerMatches}. */
export function digestOf(token: string): Buffer {
  return createHash('sha256').update(token).digest()
}

/** The exposition as a response: Prometheus text format, never cached. */
async function exposition(c: Context, metrics: Metrics): Promise<Response> {
  const { contentType, body } = await metrics.scrape()
  return c.body(body, 200, { 'Content-Type': contentType, 'Cache-Control': 'no-store' })
}

/**
 * `GET /metrics` on the service's own port, for a scraper presenting `Authorization: Bearer
 * <METRICS_TOKEN>`. Any other request goes on down the app (`next()`), where it is what a request
 * for an unknown path is: counted by the rate limit and answered 404 `not_found`; so the public
 * cannot tell that the endpoint exists, and only a scrape with the token skips the rate limit.
 * Mount it as a middleware on the path, so that no route reveals it either (405 and `Allow`).
 *
 * @example app.use('/metrics', metricsEndpoint(metrics, { token: config.metricsToken }))
 */
export function metricsEndpoint(metrics: Metrics, options: { token: string }): MiddlewareHandler {
  const expected = digestOf(options.token)
  return async function metricsRoute(c, next) {
    const read = c.req.method === 'GET' || c.req.method === 'HEAD'
    if (!read || !bearerMatches(c.req.header('authorization'), expected)) return next()
    return exposition(c, metrics)
  }
}

/**
 * The app of the metrics listener (METRICS_PORT, bound to METRICS_HOST): `GET /metrics` and
 * nothing else. Open to whoever reaches the port, unless `token` is given, which it then requires
 * as on the service's port.
 *
 * @example serve({ fetch: createMetricsApp(metrics, {}).fetch, port: 9464, hostname: '10.0.0.5' })
 */
export function createMetricsApp(metrics: Metrics, options: { token?: string }): Hono {
  const app = new Hono()
  const expected = options.token === undefined ? undefined : digestOf(options.token)
  app.get('/metrics', async (c, next) => {
    if (expected && !bearerMatches(c.req.header('authorization'), expected)) return next()
    return exposition(c, metrics)
  })
  app.notFound((c) => c.json({ ok: false, error: 'Not found', code: 'not_found' }, 404))
  return app
}
