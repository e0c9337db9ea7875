import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context, MiddlewareHandler } from 'hono'
import {
  type IRateLimiterRes,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible'
import { describeFailure, RateLimitedError } from '../descriptions/errors.js'
import { MCP_PATH } from '../descriptions/service-info.js'
import { logger } from '../logger.js'
import type { SharedRedis } from '../redis.js'
import { clientAddress, clientBucket } from './client-address.js'

/** Options of {@link createRateLimit}. */
export interface RateLimitOptions {
  /** Unpaid requests one client may make per window (RATE_LIMIT_POINTS); 0 disables the limit. */
  points: number
  /** Length of the window, in seconds (RATE_LIMIT_DURATION_S). */
  durationSeconds: number
  /** Proxies in front that append to `X-Forwarded-For` (TRUST_PROXY_HOPS); see {@link clientAddress}. */
  trustProxyHops: number
  /** The instance's Redis: the counts are shared by every instance using it. Absent: in memory. */
  redis?: SharedRedis | undefined
  /** Prefix of the counters' keys (Redis and memory); default {@link RATE_LIMIT_KEY_PREFIX}. */
  keyPrefix?: string
  /** Called once per request refused with 429 (the operator metrics' `rate_limited_total`). */
  onRefused?: () => void
}

/** The quota of one client, as the discovery documents state it. */
export interface RateLimitQuota {
  /** Unpaid requests per window. */
  points: number
  /** Length of the window, in seconds. */
  durationSeconds: number
}

/** The limiter of free work, as the app and the MCP endpoint use it. */
export interface RateLimit {
  quota: RateLimitQuota
  /** Counts and, over the limit, refuses with 429 (see {@link createRateLimit}). */
  middleware: MiddlewareHandler
  /**
   * Notes that one paid call of this HTTP request settled now, so that it costs no point (the
   * paid routes and the MCP endpoint call it; a replay of a settled call does not).
   */
  settled(request: Request): void
}

/** Prefix of the rate-limit counters in Redis (and in memory). */
export const RATE_LIMIT_KEY_PREFIX = 'payload-tools:rl'

/**
 * The quota policy's name in `RateLimit-Policy` and `RateLimit` (IETF
 * draft-ietf-httpapi-ratelimit-headers-11, May 2026: Structured Fields, a String identifier with
 * the parameters `q` quota, `w` window in seconds, `r` remaining, `t` seconds until reset).
 */
export const RATE_LIMIT_POLICY = 'free'

/** Paths never limited: the load balancer's health probe (it comes from the proxy's address). */
const EXEMPT_PATHS = new Set(['/health'])

/** The `_meta` key of an MCP payment (`x402/payment`). */
const MCP_PAYMENT_META = 'x402/payment'

/** How a request is counted. */
type Claim =
  /** One point before it runs. */
  | { kind: 'free' }
  /** Never counted. */
  | { kind: 'exempt' }
  /**
   * It presents payments (`calls` of them): not counted before it runs, so a paying client is
   * never refused; afterwards each payment that did not settle now costs a point. `alsoFree`: the
   * request also does free work (an MCP batch mixing listings and paid calls) and costs one point
   * before it runs.
   */
  | { kind: 'paid'; calls: number; alsoFree: boolean }

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/** A JSON-RPC message that is a `tools/call` carrying `_meta["x402/payment"]`. */
function isPaidCall(message: unknown): boolean {
  if (!isObject(message) || message.method !== 'tools/call' || !isObject(message.params)) {
    return false
  }
  const meta = message.params._meta
  return isObject(meta) && meta[MCP_PAYMENT_META] !== undefined
}

/** How an MCP request body (one JSON-RPC message or a batch) is counted. */
function mcpClaim(text: string): Claim {
  if (!text.includes(MCP_PAYMENT_META)) return { kind: 'free' }
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    return { kind: 'free' }
  }
  const messages = Array.isArray(body) ? body : [body]
  const calls = messages.filter(isPaidCall).length
  if (calls === 0) return { kind: 'free' }
  return { kind: 'paid', calls, alsoFree: calls < messages.length }
}

async function claimOf(c: Context): Promise<Claim> {
  const { method } = c.req
  if (method === 'POST') {
    if (c.req.path === MCP_PATH) return mcpClaim(await c.req.text())
    if (c.req.header('PAYMENT-SIGNATURE') !== undefined) {
      return { kind: 'paid', calls: 1, alsoFree: false }
    }
    return { kind: 'free' }
  }
  if ((method === 'GET' || method === 'HEAD') && EXEMPT_PATHS.has(c.req.path)) {
    return { kind: 'exempt' }
  }
  return { kind: 'free' }
}

/** The TCP peer of a request served by @hono/node-server; undefined in an in-process request. */
function socketAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: unknown; server?: unknown } | undefined
  if (!env?.incoming && !env?.server) return undefined
  return getConnInfo(c).remote.address
}

/**
 * The limit on free work per client (issue 11, docs/limits.md "Rate limits"), with
 * rate-limiter-flexible: a fixed window of `durationSeconds` in which a client may make `points`
 * unpaid requests. The client is {@link clientAddress} (IPv6 by /64, {@link clientBucket}).
 *
 * - Counted (one point each, before the handler): every request that presents no payment: the
 *   402s of paid routes, discovery, `/stats`, `/`, 404s, preflights, and MCP requests without
 *   `_meta["x402/payment"]` (initialize, tools/list, unpaid tools/call).
 * - Not counted: paid requests (a POST with `PAYMENT-SIGNATURE`, an MCP `tools/call` with a
 *   payment), so a paying client is never refused; but a payment that does not end in a call
 *   settled now (refused as invalid, failed verification, duplicate, invalid input, a replay of
 *   a settled call…) costs a point after the answer, so junk signatures and replays do not buy
 *   free work. And `GET /health`, which the load balancer probes from its own address.
 * - Over the limit: 429 `rate_limited` with `Retry-After`, `RateLimit-Policy` and `RateLimit`;
 *   over MCP the same HTTP 429 (a JSON-RPC client sees an HTTP error).
 * - With Redis, the counts are shared by every instance on it (`RateLimiterRedis`). While Redis is
 *   down or slower than REDIS_TIMEOUT_MS, each instance counts in its own memory (the
 *   `insuranceLimiter`): free endpoints keep working, with the limit per instance instead of per
 *   service. A limiter that fails anyway lets the request through (free work is never refused
 *   for our own fault).
 *
 * Client addresses are never logged.
 *
 * @returns undefined when `points` is 0 (no limit)
 * @example
 * const limit = createRateLimit({ points: 120, durationSeconds: 60, trustProxyHops: 1, redis })
 * if (limit) app.use(limit.middleware)
 */
export function createRateLimit(options: RateLimitOptions): RateLimit | undefined {
  const { points, durationSeconds: duration, trustProxyHops } = options
  if (points <= 0) return undefined
  const keyPrefix = options.keyPrefix ?? RATE_LIMIT_KEY_PREFIX
  const memory = new RateLimiterMemory({ points, duration, keyPrefix })
  const limiter = options.redis
    ? new RateLimiterRedis({
        storeClient: options.redis.client,
        points,
        duration,
        keyPrefix,
        // Not connected: straight to the insurance limiter, without waiting for a timeout.
        rejectIfRedisNotReady: true,
        insuranceLimiter: memory,
        // A client already refused is refused from memory until its window ends: a flood from
        // one client costs Redis nothing.
        inMemoryBlockOnConsumed: points + 1,
        inMemoryBlockDuration: duration,
      })
    : memory

  const policy = `"${RATE_LIMIT_POLICY}";q=${points};w=${duration}`
  // Built once through the one failure mapping; only Retry-After and RateLimit vary per refusal.
  const failure = describeFailure(
    new RateLimitedError(
      `Too many unpaid requests: ${points} per ${duration} s per client. Paid calls are not limited. Retry after Retry-After seconds.`,
    ),
  )
  // The envelope without its closing brace: each refusal appends its `request_id`.
  const bodyHead = JSON.stringify(failure.body).slice(0, -1)
  const settledCalls = new WeakMap<Request, number>()
  let failing = false

  const keyOf = (c: Context) =>
    clientBucket(clientAddress(socketAddress(c), c.req.header('x-forwarded-for'), trustProxyHops))

  /** A limiter error other than "over the limit": logged once per episode, then let through. */
  const failedOpen = (error: unknown) => {
    if (!failing) logger.warn({ err: (error as Error)?.name }, 'rate limit: limiter failed; open')
    failing = true
  }

  const refuse = (c: Context, refusal: IRateLimiterRes) => {
    const seconds = Math.max(1, Math.ceil((refusal.msBeforeNext ?? duration * 1000) / 1000))
    options.onRefused?.()
    const id = c.get('requestId') as string | undefined
    const body =
      id === undefined ? `${bodyHead}}` : `${bodyHead},"request_id":${JSON.stringify(id)}}`
    return c.body(body, failure.status, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-store',
      'Retry-After': String(seconds),
      'RateLimit-Policy': policy,
      RateLimit: `"${RATE_LIMIT_POLICY}";r=0;t=${seconds}`,
    })
  }

  const middleware: MiddlewareHandler = async (c, next) => {
    const claim = await claimOf(c)
    if (claim.kind === 'exempt') return next()
    const key = keyOf(c)
    if (claim.kind === 'free' || claim.alsoFree) {
      try {
        await limiter.consume(key, 1)
        failing = false
      } catch (error) {
        if (error instanceof RateLimiterRes) return refuse(c, error)
        failedOpen(error)
      }
    }
    if (claim.kind !== 'paid') return next()
    await next()
    const unsettled = claim.calls - (settledCalls.get(c.req.raw) ?? 0)
    // After the answer, without delaying it.
    if (unsettled > 0) limiter.penalty(key, unsettled).catch(failedOpen)
  }

  return {
    quota: { points, durationSeconds: duration },
    middleware,
    settled(request) {
      settledCalls.set(request, (settledCalls.get(request) ?? 0) + 1)
    },
  }
}
