import { Hono, type MiddlewareHandler } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { HTTPException } from 'hono/http-exception'
import { bazaarExtension } from '../descriptions/bazaar.js'
import { logger } from '../logger.js'
import type { PaymentGate } from '../payment/gate.js'
import type { Rail } from '../payment/rails.js'
import type { Receipts } from '../receipts/index.js'
import type { RedisState } from '../redis.js'
import type { Stats } from '../telemetry/index.js'
import type { ToolDefinition } from '../tools/types.js'
import { registerDiscovery } from './discovery.js'
import type { Drain } from './drain.js'
import { toHttpFailure } from './failures.js'
import { type HealthOptions, registerHealth, type TelemetryHealthLike } from './health.js'
import { registerLanding } from './landing/index.js'
import { methodAwareNotFound } from './methods.js'
import { registerPaidRoutes } from './paid-routes.js'
import type { RateLimit } from './rate-limit.js'
import { registerReceipts } from './receipts.js'
import { requestIds } from './request-id.js'
import { corsPolicy, precomputedHeaders, securityHeaders } from './security.js'
import { registerStats } from './stats.js'

/** Where the operator metrics are served (Prometheus text format), when METRICS_TOKEN is set. */
export const METRICS_PATH = '/metrics'

/** Largest accepted request body, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024

/** What the HTTP app is built from. */
export interface AppDeps {
  gate: PaymentGate
  tools: readonly ToolDefinition[]
  publicBaseUrl: string
  /** Configured rails in advertising order (OpenAPI `x-payment-info`); none when absent. */
  rails?: readonly Rail[]
  /** Signatures over the origin by the payTo keys, published in /.well-known/x402. */
  ownershipProofs?: readonly string[]
  /** Telemetry's last-known state for /health; absent when the app runs without telemetry. */
  telemetryHealth?: () => TelemetryHealthLike
  /** The shared Redis connection's last-known state for /health; absent without REDIS_URL. */
  redisHealth?: () => RedisState
  /** The prepaid channels' state for /health; absent when BATCH_SETTLEMENT is off. */
  channelsHealth?: HealthOptions['channels']
  /** Whether the prepaid channels' refund flow is served on GET of the paid routes now. */
  refunds?: () => boolean
  /** Aggregates for GET /stats; absent -> /stats answers 503 telemetry_unavailable. */
  stats?: () => Promise<Stats>
  /**
   * More routes, registered after the paid routes and before the not-found handler: the
   * composition root mounts the MCP endpoint this way, so that HTTP never imports MCP.
   */
  mounts?: readonly Mount[]
  /** Counts requests in flight and refuses new ones during shutdown (src/http/drain.ts). */
  drain?: Drain
  /** The limit on free work per client (src/http/rate-limit.ts); absent: no limit. */
  rateLimit?: RateLimit
  /** Signed receipts: the JWKS, the DID document and `POST /receipts/verify`; absent: none. */
  receipts?: Receipts
  /** Operator metrics (src/metrics/, wired by src/service.ts); absent: none recorded or served. */
  metrics?: AppMetrics
}

/** What the app needs of the operator metrics. */
export interface AppMetrics {
  /** Times every request (`http_request_duration_seconds`); runs around all the others. */
  observe: MiddlewareHandler
  /**
   * Serves `GET /metrics`, registered before the rate limit so that a scrape is never limited; a
   * request it does not serve (another method, no or a wrong token) goes on as to an unknown path
   * (counted, 404).
   */
  endpoint?: MiddlewareHandler
}

/** Registers routes on the app (e.g. `(app) => registerMcp(app, options)`). */
export type Mount = (app: Hono) => void

/**
 * Builds the Hono app: paid tool routes from the catalogue, the free endpoints, and the given
 * mounts (the MCP endpoint).
 *
 * @example
 * const app = createApp({ gate, tools: catalog, publicBaseUrl: 'http://127.0.0.1:8402' })
 * serve({ fetch: app.fetch, port: 8402 })
 */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono()

  // First: every later middleware, handler and log line of the request sees its id.
  app.use(requestIds())
  if (deps.metrics) app.use(deps.metrics.observe)
  app.use(async (c, next) => {
    const started = performance.now()
    await next()
    // An unpaid 402 (price probes) is logged at debug: the most frequent answer, whose log line
    // would cost about as much as the rest of it; so is a Prometheus scrape. Everything else at info.
    const status = c.res.status
    const level =
      (status === 402 && !c.req.header('payment-signature')) ||
      (status === 200 && c.req.path === METRICS_PATH)
        ? 'debug'
        : 'info'
    if (!logger.isLevelEnabled(level)) return
    // Method, path, status and time only: never bodies, headers or payers.
    logger[level](
      {
        method: c.req.method,
        path: c.req.path,
        status,
        ms: Math.round(performance.now() - started),
      },
      'request',
    )
  })
  if (deps.drain) app.use(deps.drain.middleware)
  const paidPaths = new Set<string>(deps.tools.map((tool) => tool.path))
  const sameForEveryResponse = precomputedHeaders([securityHeaders(), corsPolicy()], {
    selfServed: (c) => c.req.method === 'POST' && paidPaths.has(c.req.path),
  })
  app.use(sameForEveryResponse)
  app.options('*', corsPolicy())

  const streamLimit = bodyLimit({
    maxSize: MAX_BODY_BYTES,
    onError: () => {
      throw new HTTPException(413)
    },
  })
  // hono's bodyLimit reads `c.req.raw.body`, which makes @hono/node-server leave its fast body
  // path; so a declared Content-Length is checked from the header, and only a chunked body
  // streams through bodyLimit, which counts it.
  app.use((c, next) => {
    if (c.req.method !== 'POST') return next()
    const length = c.req.header('content-length')
    if (length === undefined || c.req.header('transfer-encoding') !== undefined) {
      return streamLimit(c, next)
    }
    if (Number(length) > MAX_BODY_BYTES) throw new HTTPException(413)
    return next()
  })
  // A middleware, not a GET route: the route table (405 and `Allow`) must not reveal the path.
  if (deps.metrics?.endpoint) app.use(METRICS_PATH, deps.metrics.endpoint)
  if (deps.rateLimit) app.use(deps.rateLimit.middleware)

  registerHealth(app, {
    link: deps.gate.link,
    devnet: deps.rails?.some((rail) => rail.devnet) ?? false,
    telemetryHealth: deps.telemetryHealth,
    redisHealth: deps.redisHealth,
    channels: deps.channelsHealth,
  })
  registerStats(app, deps.stats ? { stats: deps.stats } : {})
  registerLanding(app, {
    tools: deps.tools,
    rails: deps.rails ?? [],
    publicBaseUrl: deps.publicBaseUrl,
    stats: deps.stats,
  })
  registerDiscovery(app, {
    tools: deps.tools,
    publicBaseUrl: deps.publicBaseUrl,
    rails: deps.rails ?? [],
    link: deps.gate.link,
    maxBodyBytes: MAX_BODY_BYTES,
    runner: deps.gate.runner.options,
    ownershipProofs: deps.ownershipProofs,
    rateLimit: deps.rateLimit?.quota,
    // Channels configured: their refund flow is wired (refunds), so llms.txt describes them.
    channels: deps.refunds !== undefined,
  })
  if (deps.receipts) {
    registerReceipts(app, {
      receipts: deps.receipts,
      tools: deps.tools,
      runner: deps.gate.runner,
      quotaOf: deps.rateLimit?.quotaOf,
    })
  }
  registerPaidRoutes(app, {
    ...deps,
    responseHeaders: sameForEveryResponse.recordFor,
    extensionsFor: (tool) => bazaarExtension(tool, 'http'),
    ...(deps.rateLimit ? { quotaOf: deps.rateLimit.quotaOf } : {}),
  })
  for (const mount of deps.mounts ?? []) mount(app)

  app.notFound(methodAwareNotFound(app))
  app.onError((error, c) => {
    const failure = toHttpFailure(error)
    return c.json(failure.body, failure.status, failure.headers)
  })
  return app
}
