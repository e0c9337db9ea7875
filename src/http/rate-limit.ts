import { getConnInfo } from '@hono/node-server/conninfo'
import type { Context, MiddlewareHandler } from 'hono'
import {
  type IRateLimiterRes,
  RateLimiterMemory,
  RateLimiterRedis,
  RateLimiterRes,
} from 'rate-limiter-flexible'
import { MCP_PATH } from '../descriptions/service-info.js'
import { RateLimitedError } from '../failures/errors.js'
import { logger } from '../logger.js'
import type { ClientQuota } from '../payment/quota.js'
import type { SharedRedis } from '../redis.js'
import { clientAddress, clientBucket } from './client-address.js'
import { toHttpFailure } from './failures.js'

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
  /**
   * Paths of the paid tool routes: a `POST` there with `PAYMENT-SIGNATURE` is charged by the
   * payment gate through {@link RateLimit.quotaOf}, not here. Anywhere else the header buys
   * nothing.
   */
  paidPaths?: ReadonlySet<string>
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

/** The limiter of free work, as the app, the paid routes and the MCP endpoint use it. */
export interface RateLimit {
  quota: RateLimitQuota
  /**
   * Counts and, over the limit, refuses with 429 every request that presents no payment (see
   * {@link createRateLimit}); leaves paid tool calls and `POST /mcp` to {@link quotaOf}.
   */
  middleware: MiddlewareHandler
  /** The rate-limit account of the request's client, for the payment gate and the MCP endpoint. */
  quotaOf(c: Context): ClientQuota
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

/** Context key: the request's client bucket (see {@link clientBucket}). */
const BUCKET_KEY = 'rateLimitBucket'

/** The TCP peer of a request served by @hono/node-server; undefined in an in-process request. */
function socketAddress(c: Context): string | undefined {
  const env = c.env as { incoming?: unknown; server?: unknown } | undefined
  if (!env?.incoming && !env?.server) return undefined
  return getConnInfo(c).remote.address
}

/**
 * The limit on free work per client (docs/limits.md "Rate limits"), with rate-limiter-flexible: a
 * fixed window of `durationSeconds` in which a client may make `points` unpaid requests. The
 * client is {@link clientAddress} (IPv6 by /64, {@link clientBucket}).
 *
 * - Counted here, one point each before the handler: every request that presents no payment: the
 *   402s of paid routes, discovery, `/stats`, `/`, 404s, preflights (a `PAYMENT-SIGNATURE` header
 *   outside a paid route buys nothing).
 * - Counted by the payment gate ({@link quotaOf}): a request to a paid route that carries a
 *   payment costs a point per started 64 KiB of its body (`requestPoints`), before its payment is
 *   read or its body checked: over the limit it gets 429 and nothing is done. Its points come
 *   back once its payment verifies, and are taken again if it then does not settle; a settled
 *   payment adds the points of its unpaid request and one more (`settledCredit`), so that a
 *   client paying for what it calls is never locked out. An unpaid body larger than 64 KiB pays
 *   the rest of its points before its free check, as does a `POST /receipts/verify` body.
 * - Counted by the MCP endpoint through {@link quotaOf}: a point per started 64 KiB of the body
 *   before it is read, and one per JSON-RPC message beyond that, except a paid `tools/call`;
 *   given back, as above, when the request's one message is a paid call.
 * - Never counted: `GET /health`, which the load balancer probes from its own address.
 * - Over the limit: 429 `rate_limited` with `Retry-After`, `RateLimit-Policy` and `RateLimit`.
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
  const paidPaths = options.paidPaths ?? new Set<string>()
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
  const message = `Too many unpaid requests: ${points} per ${duration} s per client. Paying clients are never limited by their paid calls. Retry after Retry-After seconds.`
  let failing = false

  // Once per request: the middleware and the gate's quotaOf both ask for it.
  const keyOf = (c: Context): string => {
    let key = c.get(BUCKET_KEY) as string | undefined
    if (key === undefined) {
      key = clientBucket(
        clientAddress(socketAddress(c), c.req.header('x-forwarded-for'), trustProxyHops),
      )
      c.set(BUCKET_KEY, key)
    }
    return key
  }

  /** A limiter error other than "over the limit": logged once per episode, then let through. */
  const failedOpen = (error: unknown) => {
    if (!failing) logger.warn({ err: (error as Error)?.name }, 'rate limit: limiter failed; open')
    failing = true
  }

  /** The 429 of a refusal: Retry-After and the IETF headers travel with the error. */
  const refusal = (res: IRateLimiterRes) => {
    const seconds = Math.max(1, Math.ceil((res.msBeforeNext ?? duration * 1000) / 1000))
    options.onRefused?.()
    return new RateLimitedError(message, seconds, {
      'Cache-Control': 'no-store',
      'RateLimit-Policy': policy,
      RateLimit: `"${RATE_LIMIT_POLICY}";r=0;t=${seconds}`,
    })
  }

  /**
   * Takes `n` points from a client.
   *
   * @throws {RateLimitedError} over the limit
   */
  const consume = async (key: string, n: number) => {
    if (n <= 0) return
    try {
      await limiter.consume(key, n)
      failing = false
    } catch (error) {
      if (error instanceof RateLimiterRes) throw refusal(error)
      failedOpen(error)
    }
  }

  const middleware: MiddlewareHandler = async (c, next) => {
    const { method, path } = c.req
    if (method === 'POST' && (path === MCP_PATH || paidPaths.has(path))) {
      // The MCP endpoint counts its messages; a paid route is counted by the gate when it
      // carries a payment, here otherwise.
      if (path === MCP_PATH || c.req.header('PAYMENT-SIGNATURE') !== undefined) return next()
    }
    if ((method === 'GET' || method === 'HEAD') && EXEMPT_PATHS.has(path)) return next()
    try {
      await consume(keyOf(c), 1)
    } catch (error) {
      const failure = toHttpFailure(error)
      return c.json(failure.body, failure.status, failure.headers)
    }
    return next()
  }

  return {
    quota: { points, durationSeconds: duration },
    middleware,
    quotaOf(c) {
      const key = keyOf(c)
      return {
        charge: (n = 1) => consume(key, n),
        refund(n) {
          if (n > 0) limiter.reward(key, n).catch(failedOpen)
        },
        takeBack(n) {
          if (n > 0) limiter.penalty(key, n).catch(failedOpen)
        },
      }
    },
  }
}
