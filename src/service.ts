import type { Config } from './config.js'
import { createApp, MAX_BODY_BYTES } from './http/app.js'
import { createDrain, type Drain } from './http/drain.js'
import { createRateLimit } from './http/rate-limit.js'
import { createLifecycle, type Lifecycle } from './lifecycle.js'
import { resolveAllowList } from './mcp/dns-rebinding.js'
import { registerMcp } from './mcp/server.js'
import {
  createMetrics,
  facilitatorHost,
  type Metrics,
  metricsEndpoint,
  timedFacilitator,
} from './metrics/index.js'
import { assertPaidCallBudget } from './payment/budget.js'
import {
  createFacilitatorLink,
  type FacilitatorLink,
  MAX_TIMEOUT_SECONDS,
} from './payment/facilitator.js'
import {
  createPaymentGate,
  type PaymentEvent,
  type PaymentGate,
  type PaymentObserver,
} from './payment/gate.js'
import { createMemoryGuard, type SettlementGuard } from './payment/guard.js'
import { configuredRails } from './payment/rails.js'
import { createRedisGuard } from './payment/redis-guard.js'
import { createRedis, type SharedRedis } from './redis.js'
import { createToolRunner, type ToolRunner } from './runner/runner.js'
import type { Telemetry } from './telemetry/index.js'
import { catalog } from './tools/catalog.js'
import type { ToolEnv } from './tools/types.js'

/** Parts a test or the devnet may replace or add. */
export interface ServiceOverrides {
  guard?: SettlementGuard
  /** Telemetry: records payment events, serves /stats and reports health. */
  telemetry?: Telemetry
  /** An extra payment observer (tests), called after telemetry. */
  observer?: PaymentObserver
  env?: ToolEnv
  /** Runs the tools; by default a worker pool from TOOL_WORKERS, TOOL_TIMEOUT_MS, TOOL_QUEUE_LIMIT. */
  runner?: ToolRunner
  /** The shared Redis connection; by default one opened from REDIS_URL (none without it). */
  redis?: SharedRedis
  /** Prefix of the rate-limit keys (tests sharing one Redis); default RATE_LIMIT_KEY_PREFIX. */
  rateLimitKeyPrefix?: string
  /**
   * The operator metrics (src/main.ts creates them first, for telemetry's writes); by default
   * {@link createServiceMetrics}.
   */
  metrics?: Metrics
}

/** The assembled service: the Hono app and the parts behind it. */
export interface Service {
  app: ReturnType<typeof createApp>
  gate: PaymentGate
  link: FacilitatorLink
  runner: ToolRunner
  /** Shutdown state: `beginShutdown()` on SIGTERM (src/main.ts). */
  lifecycle: Lifecycle
  /** Requests in flight, and the 503 `shutting_down` of new ones during shutdown. */
  drain: Drain
  /** The shared Redis connection (REDIS_URL), if any. */
  redis: SharedRedis | undefined
  /** The operator metrics; undefined when neither METRICS_TOKEN nor METRICS_PORT is set. */
  metrics: Metrics | undefined
  /**
   * Stops the tool workers and closes the Redis connection. Call after the requests in flight
   * ended (`drain.idle()`).
   */
  close(): Promise<void>
}

/**
 * The operator metrics of a service under `config`, labelled with the catalogue's tools and the
 * configured rails' networks; undefined when neither METRICS_TOKEN nor METRICS_PORT is set:
 * nothing could read them, so nothing is recorded.
 *
 * @example
 * const metrics = createServiceMetrics(config)
 * const telemetry = await createTelemetry({ onWrite: metrics?.telemetryWrite })
 */
export function createServiceMetrics(config: Config): Metrics | undefined {
  if (config.metricsToken === undefined && config.metricsPort === undefined) return undefined
  return createMetrics({
    tools: catalog.map((tool) => tool.id),
    networks: configuredRails(config).map((rail) => rail.network),
  })
}

/**
 * Counts a payment event of the gate: every outcome but `verified`, so that each paid call counts
 * once, by how it ended; a settled one adds its amount to the revenue.
 */
function countPayment(metrics: Metrics, event: PaymentEvent): void {
  if (event.outcome === 'verified') return
  const { tool, network, transport, outcome } = event
  metrics.payment({ tool, network, transport, outcome })
  if (outcome === 'settled') metrics.settledAtomic(network, event.amount)
}

/**
 * Assembles the service from configuration: rails, facilitator link, duplicate-settlement guard
 * (on Redis when REDIS_URL is set, else in memory), payment gate, and the HTTP app with the MCP endpoint mounted on it (the composition root: the
 * only module that knows both transports). Waits on no I/O; the facilitator's `/supported` is
 * loaded lazily, the tool workers start with the first paid call (or `runner.warm()`), and the
 * Redis connection (REDIS_URL) opens in the background.
 *
 * @example
 * const { app, close } = createService(loadConfig())
 * @throws {Error} when a paid call could outlive its payment under this configuration
 *   ({@link assertPaidCallBudget})
 */
export function createService(config: Config, overrides: ServiceOverrides = {}): Service {
  assertPaidCallBudget({
    facilitatorTimeoutMs: config.facilitatorTimeoutMs,
    workers: config.toolWorkers,
    queueLimit: config.toolQueueLimit,
    timeoutMs: config.toolTimeoutMs,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    guardTimeoutMs: config.redisUrl || overrides.redis ? config.redisTimeoutMs : 0,
  })
  const rails = configuredRails(config)
  const metrics = overrides.metrics ?? createServiceMetrics(config)
  const facilitatorUrl = config.facilitatorUrl
  const link = createFacilitatorLink({
    url: facilitatorUrl,
    timeoutMs: config.facilitatorTimeoutMs,
    rails,
    ...(metrics && facilitatorUrl
      ? {
          wrapClient: (client) =>
            timedFacilitator(client, facilitatorHost(facilitatorUrl), metrics.facilitatorRequest),
        }
      : {}),
  })
  const { telemetry, observer: extra } = overrides
  const observer: PaymentObserver = async (event) => {
    if (metrics) countPayment(metrics, event)
    await telemetry?.record(event)
    await extra?.(event)
  }
  const runner =
    overrides.runner ??
    createToolRunner({
      workers: config.toolWorkers,
      timeoutMs: config.toolTimeoutMs,
      queueLimit: config.toolQueueLimit,
      ...(metrics ? { observer: { ran: metrics.toolRun, rejected: metrics.poolRejection } } : {}),
    })
  const lifecycle = createLifecycle({
    shutdownTimeoutMs: config.shutdownTimeoutMs,
    facilitatorTimeoutMs: config.facilitatorTimeoutMs,
  })
  const drain = createDrain(() => lifecycle.shuttingDown())
  // One connection per instance, opened in the background (ioredis connects lazily on its own).
  const redis =
    overrides.redis ??
    (config.redisUrl
      ? createRedis({
          url: config.redisUrl,
          timeoutMs: config.redisTimeoutMs,
          ...(metrics ? { onCommand: metrics.redisCommand } : {}),
        })
      : undefined)
  const rateLimit = createRateLimit({
    points: config.rateLimitPoints,
    durationSeconds: config.rateLimitDurationS,
    trustProxyHops: config.trustProxyHops,
    redis,
    ...(overrides.rateLimitKeyPrefix ? { keyPrefix: overrides.rateLimitKeyPrefix } : {}),
    ...(metrics ? { onRefused: metrics.rateLimited } : {}),
  })
  metrics?.watch({
    pool: () => {
      const { running, queued } = runner.status()
      return { busy: running, queued, workers: runner.options.workers }
    },
    ...(telemetry
      ? {
          telemetry: () => {
            const health = telemetry.health()
            return { up: health.status === 'ok', buffered: health.buffered }
          },
        }
      : {}),
    ...(redis ? { redis: () => ({ up: redis.state().status === 'ready' }) } : {}),
  })
  const guard =
    overrides.guard ??
    (redis
      ? createRedisGuard({ client: redis.client, readyWaitMs: config.redisTimeoutMs })
      : createMemoryGuard())
  const gate = createPaymentGate({
    link,
    guard,
    runner,
    canSettle: () => lifecycle.canSettle(),
    observer,
    ...(overrides.env ? { env: overrides.env } : {}),
  })
  const mcpAllowList = resolveAllowList({
    publicBaseUrl: config.publicBaseUrl,
    host: config.host,
    port: config.port,
    allowedHosts: config.mcpAllowedHosts,
    allowedOrigins: config.mcpAllowedOrigins,
  })
  const app = createApp({
    gate,
    tools: catalog,
    publicBaseUrl: config.publicBaseUrl,
    rails,
    drain,
    ...(rateLimit ? { rateLimit } : {}),
    ...(telemetry
      ? { stats: () => telemetry.stats(), telemetryHealth: () => telemetry.health() }
      : {}),
    ...(redis ? { redisHealth: () => redis.state() } : {}),
    ...(config.ownershipProofs ? { ownershipProofs: config.ownershipProofs } : {}),
    ...(metrics
      ? {
          metrics: {
            observe: metrics.http,
            ...(config.metricsToken
              ? { endpoint: metricsEndpoint(metrics, { token: config.metricsToken }) }
              : {}),
          },
        }
      : {}),
    mounts: [
      (app) =>
        registerMcp(app, {
          gate,
          tools: catalog,
          publicBaseUrl: config.publicBaseUrl,
          allowList: mcpAllowList,
          maxBodyBytes: MAX_BODY_BYTES,
          ...(rateLimit ? { onSettled: rateLimit.settled } : {}),
        }),
    ],
  })
  const close = async () => {
    await runner.close()
    // Only what this service opened: an injected connection belongs to its caller.
    if (redis && !overrides.redis) await redis.close()
  }
  return { app, gate, link, runner, lifecycle, drain, redis, metrics, close }
}
