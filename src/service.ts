import { randomBytes } from 'node:crypto'
import { type Channels, createChannels } from './channels/index.js'
import type { Config } from './config.js'
import { createFacilitators } from './facilitators/index.js'
import {
  createFacilitatorLink,
  type FacilitatorLink,
  MAX_TIMEOUT_SECONDS,
} from './facilitators/link.js'
import { createApp } from './http/app.js'
import { createDrain, type Drain } from './http/drain.js'
import { createRateLimit } from './http/rate-limit.js'
import { createLifecycle, type Lifecycle } from './lifecycle.js'
import { resolveAllowList } from './mcp/dns-rebinding.js'
import { registerMcp } from './mcp/server.js'
import {
  countNote,
  countPayment,
  createMetrics,
  type Metrics,
  metricsEndpoint,
  timedFacilitator,
} from './metrics/index.js'
import { assertPaidCallBudget, worstIntentHoldMs, worstSettleMs } from './payment/budget.js'
import {
  createPaymentGate,
  type PaymentGate,
  type PaymentNote,
  type PaymentObserver,
} from './payment/gate.js'
import { createMemoryGuard, type SettlementGuard } from './payment/guard.js'
import { configuredRails, type Rail } from './payment/rails.js'
import { createRedisGuard } from './payment/redis-guard.js'
import {
  createReceipts,
  parseRetiredKeys,
  type Receipts,
  resolveSigningKey,
} from './receipts/index.js'
import { createRedis, type SharedRedis } from './redis.js'
import { createToolRunner, type ToolRunner } from './runner/runner.js'
import { createSettlementJudge, questionOf } from './settlement/index.js'
import {
  createSettlementResolver,
  RESOLVE_INTERVAL_MS,
  type SettlementResolver,
} from './settlement/resolver.js'
import type { QuestionOf, SettlementJudge } from './settlement/types.js'
import type { Telemetry } from './telemetry/index.js'
import { WRITE_TIMEOUT_MS } from './telemetry/limits.js'
import { payerKey } from './telemetry/payer-key.js'
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
  /** The receipts; by default from RECEIPT_SIGNING_KEY (or the dev key in ./data) and RECEIPT_RETIRED_KEYS. */
  receipts?: Receipts
  /**
   * The operator metrics (src/main.ts creates them first, for telemetry's writes); by default
   * {@link createServiceMetrics}.
   */
  metrics?: Metrics
  /**
   * Judges settlements in doubt on chain for the payer's retry and the resolver; by default the
   * judge of EVM_RPC_URL and SOLANA_RPC_URL (a rail without its URL is not covered: the
   * facilitator is asked again on a retry, and the resolver only counts its intents in doubt).
   */
  judge?: SettlementJudge
  /** The judge's question of a payment, also kept in the ledger; default src/settlement's. */
  questionOf?: QuestionOf
  /** Period of the settlement resolver's passes, in milliseconds; default 10 s. */
  resolveIntervalMs?: number
  /**
   * Where the channels keep their state without Redis, and the dev receiver-authorizer key;
   * default `./data` (tests give each service its own).
   */
  dataDir?: string
  /**
   * The channels' Redis key prefix (records and the manager's lease), how often a standby asks
   * for the lease and how often the manager surveys the store, in milliseconds (tests).
   */
  channels?: { keyPrefix?: string; leasePollMs?: number; surveyMs?: number }
}

/**
 * How much longer than its worst (`worstIntentHoldMs`: the run and the settle) a call holds its
 * ledger intent from the resolver, in milliseconds: the outcome's write with the event's.
 */
export const LEDGER_HOLD_MARGIN_MS = 10_000

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
  /** Signed receipts and offers, the JWKS (src/receipts). */
  receipts: Receipts
  /** The operator metrics; undefined when neither METRICS_TOKEN nor METRICS_PORT is set. */
  metrics: Metrics | undefined
  /**
   * The settlement resolver, with telemetry whose store has the ledger; `start()` it (src/main.ts
   * does) to decide the intents in doubt at start and then periodically.
   */
  resolver: SettlementResolver | undefined
  /**
   * The prepaid channels of the Base rail (BATCH_SETTLEMENT); `start()` them (src/main.ts does)
   * to check the escrow, offer the scheme and run the channel manager. Undefined when off.
   */
  channels: Channels | undefined
  /**
   * Stops the channel manager, the settlement resolver and the tool workers and closes the Redis
   * connection. Call after the requests in flight ended (`drain.idle()`).
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
 * Assembles the service from configuration: rails, facilitator link, duplicate-settlement guard
 * (on Redis when REDIS_URL is set, else in memory), payment gate, and the HTTP app with the MCP endpoint mounted on it (the composition root: the
 * only module that knows both transports). Waits on no I/O; the facilitator's `/supported` is
 * loaded lazily, the tool workers start with the first paid call (or `runner.warm()`), and the
 * Redis connection (REDIS_URL) opens in the background.
 *
 * @example
 * const { app, close } = createService(loadConfig())
 * @throws {Error} when a paid call could outlive its payment under this configuration
 *   ({@link assertPaidCallBudget}), or a facilitator's API key is malformed
 */
export function createService(config: Config, overrides: ServiceOverrides = {}): Service {
  const bounds = {
    facilitatorTimeoutMs: config.facilitatorTimeoutMs,
    settleTimeoutMs: config.facilitatorSettleTimeoutMs,
    workers: config.toolWorkers,
    queueLimit: config.toolQueueLimit,
    timeoutMs: config.toolTimeoutMs,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
    guardTimeoutMs: config.redisUrl || overrides.redis ? config.redisTimeoutMs : 0,
    facilitators: config.facilitators.length,
    ledgerWriteMs: overrides.telemetry?.ledger ? WRITE_TIMEOUT_MS : 0,
  }
  assertPaidCallBudget(bounds)
  const rails = configuredRails(config)
  const receipts = overrides.receipts ?? receiptsFrom(config)
  const metrics = overrides.metrics ?? createServiceMetrics(config)
  const { telemetry, observer: extra } = overrides
  const observer: PaymentObserver = async (event) => {
    if (metrics) countPayment(metrics, event)
    const decided = await telemetry?.record(event)
    await extra?.(event)
    return decided
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
    settleMs: worstSettleMs(bounds),
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
  const facilitators = createFacilitators({
    facilitators: config.facilitators,
    timeoutMs: config.facilitatorTimeoutMs,
    settleTimeoutMs: config.facilitatorSettleTimeoutMs,
    credentials: { cdp: config.cdpApiKey, payai: config.payaiApiKey },
    ...(metrics
      ? { wrap: (client, host) => timedFacilitator(client, host, metrics.facilitatorRequest) }
      : {}),
  })
  const channels = channelsFrom(config, rails, facilitators, redis, overrides, metrics)
  const link = createFacilitatorLink({
    client: facilitators,
    rails,
    extensions: [receipts.offerReceipt.extension],
    ...(channels ? { schemes: [channels.offer] } : {}),
  })
  const rateLimit = createRateLimit({
    points: config.rateLimitPoints,
    durationSeconds: config.rateLimitDurationS,
    trustProxyHops: config.trustProxyHops,
    redis,
    paidPaths: new Set(catalog.map((tool) => tool.path)),
    ...(overrides.rateLimitKeyPrefix ? { keyPrefix: overrides.rateLimitKeyPrefix } : {}),
    ...(metrics ? { onRefused: metrics.rateLimited } : {}),
  })
  // One keyed hash of payers for the guard and the chain judge, the same on every instance:
  // telemetry's salt (TELEMETRY_SALT). Without telemetry (tests), TELEMETRY_SALT or a salt of
  // this process.
  const salt = config.telemetrySalt ?? randomBytes(32).toString('hex')
  const payerHash = telemetry
    ? (payer: string) => telemetry.payerKey(payer)
    : (payer: string) => payerKey(salt, payer)
  const ledger = telemetry?.ledger
  const judge =
    overrides.judge ??
    createSettlementJudge({
      evmRpcUrl: config.evmRpcUrl,
      solanaRpcUrl: config.solanaRpcUrl,
      networks: rails.map((rail) => rail.network),
      payerKey: payerHash,
    })
  let unresolved = 0
  const resolver = ledger
    ? createSettlementResolver({
        ledger,
        judge,
        networks: rails.map((rail) => rail.network),
        record: observer,
        intervalMs: overrides.resolveIntervalMs ?? RESOLVE_INTERVAL_MS,
        onUnresolved: (count) => {
          unresolved = count
        },
      })
    : undefined
  metrics?.watch({
    ...(resolver ? { settlements: () => ({ unresolved }) } : {}),
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
    ...(channels
      ? {
          channels: () => {
            const { manager } = channels.status()
            return {
              unclaimedAtomic: manager.unclaimed,
              oldestUnclaimedSeconds: manager.oldestUnclaimedSeconds,
              holder: manager.role === 'holder',
            }
          },
        }
      : {}),
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
    payerHash,
    replayLimit: config.replayLimit,
    canSettle: () => lifecycle.canSettle(),
    observer,
    ...(metrics ? { onNote: (note: PaymentNote) => countNote(metrics, note) } : {}),
    receipts,
    ...(overrides.env ? { env: overrides.env } : {}),
    ...(ledger ? { ledger, ledgerHoldMs: worstIntentHoldMs(bounds) + LEDGER_HOLD_MARGIN_MS } : {}),
    judge,
    // The EVM question carries the payer's keyed hash: the judge counts only its logs.
    questionOf:
      overrides.questionOf ??
      ((payment, requirements) => questionOf(payment, requirements, undefined, payerHash)),
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
    receipts,
    ...(rateLimit ? { rateLimit } : {}),
    ...(telemetry
      ? { stats: () => telemetry.stats(), telemetryHealth: () => telemetry.health() }
      : {}),
    ...(redis ? { redisHealth: () => redis.state() } : {}),
    ...(channels
      ? {
          refunds: () => channels.status().offered,
          channelsHealth: {
            status: () => channels.status(),
            claimIntervalSeconds: config.batchSettlement.claimIntervalSeconds,
          },
        }
      : {}),
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
          ...(rateLimit ? { quotaOf: rateLimit.quotaOf } : {}),
        }),
    ],
  })
  const close = async () => {
    // Vouchers are kept in the channel store: the next holder of the lease claims them.
    await channels?.stop()
    await resolver?.stop()
    await runner.close()
    // Only what this service opened: an injected connection belongs to its caller.
    if (redis && !overrides.redis) await redis.close()
  }
  return {
    app,
    gate,
    link,
    runner,
    lifecycle,
    drain,
    redis,
    receipts,
    metrics,
    resolver,
    channels,
    close,
  }
}

/**
 * The prepaid channels of the Base rail when BATCH_SETTLEMENT is on and there is a Base rail and
 * a facilitator; offered once their escrow check passes (`start()`).
 */
function channelsFrom(
  config: Config,
  rails: readonly Rail[],
  facilitators: ReturnType<typeof createFacilitators>,
  redis: SharedRedis | undefined,
  overrides: ServiceOverrides,
  metrics: Metrics | undefined,
): Channels | undefined {
  const rail = rails.find((r) => r.id === 'evm')
  if (!config.batchSettlement.enabled || !rail || !facilitators) return undefined
  return createChannels({
    config: config.batchSettlement,
    rail,
    facilitator: facilitators,
    rpcUrl: config.evmRpcUrl,
    redis: redis?.client,
    dataDir: overrides.dataDir ?? DATA_DIR,
    ...overrides.channels,
    ...(metrics ? { observer: { job: metrics.channelJob } } : {}),
  })
}

/** Directory of the generated development files (the receipt key, beside the telemetry salt). */
const DATA_DIR = './data'

/**
 * The receipts from RECEIPT_SIGNING_KEY (or the development key, read or generated once in
 * ./data) and RECEIPT_RETIRED_KEYS; `iss` is PUBLIC_BASE_URL.
 *
 * @throws {Error} naming the variable when a key cannot be read
 */
function receiptsFrom(config: Config): Receipts {
  const { key, source } = resolveSigningKey(config.receiptSigningKey, DATA_DIR)
  return createReceipts({
    issuer: config.publicBaseUrl,
    signingKey: key,
    keySource: source,
    retiredKeys: config.receiptRetiredKeys ? parseRetiredKeys(config.receiptRetiredKeys) : [],
  })
}
