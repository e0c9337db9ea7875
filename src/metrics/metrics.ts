import { prometheus } from '@hono/prometheus'
import type { MiddlewareHandler } from 'hono'
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/**
 * Outcome of a paid call as `x402_payments_total` counts it. One call counts once:
 * - `settled`: verified, run and settled; `settle_failed`: verified and run, the settlement failed
 *   (result withheld); `tool_failed_unsettled`: verified, the tool failed or timed out (nothing
 *   settled);
 * - `verify_failed`: the facilitator rejected the payment (`code`: its invalidReason);
 * - `replayed`: an idempotent replay of a settled call (nothing verified or settled again);
 * - `refused`: the gate refused the payment before verify (`code`: our failure code, e.g.
 *   `invalid_payment`, `duplicate_settlement`, `payment_in_progress`, `overloaded`).
 */
export type PaymentMetricOutcome =
  | 'settled'
  | 'settle_failed'
  | 'tool_failed_unsettled'
  | 'verify_failed'
  | 'replayed'
  | 'refused'

/** One paid call's outcome (see {@link Metrics.payment}). */
export interface PaymentSample {
  /** Catalogue tool id, e.g. `hash`. */
  tool: string
  /** CAIP-2 network of a configured rail; `unknown` when the payment named none (refused). */
  network: string
  transport: 'http' | 'mcp'
  outcome: PaymentMetricOutcome
  /** For `verify_failed` and `refused`: the reason code (`[a-z][a-z0-9_]*`, at most 64 chars). */
  code?: string
}

/** A facilitator operation (x402 v2 facilitator API). */
export type FacilitatorOperation = 'verify' | 'settle' | 'supported'

/**
 * How a facilitator request ended: `success` (valid, settled, or `/supported` read), `rejected` (a
 * verdict against the payment: `isValid: false`, `success: false`, or a 4xx carrying one),
 * `timeout` (FACILITATOR_TIMEOUT_MS passed), `error` (anything else: unreachable, 5xx, garbage).
 */
export type FacilitatorResult = 'success' | 'rejected' | 'timeout' | 'error'

/** One facilitator request (see {@link Metrics.facilitatorRequest}). */
export interface FacilitatorSample {
  /** The facilitator's host (`host[:port]` of its configured URL), never a path or credential. */
  facilitator: string
  operation: FacilitatorOperation
  result: FacilitatorResult
  /** Duration, in seconds. */
  seconds: number
}

/**
 * How a tool run on a worker ended: `ok`, `tool_error` (the tool refused its input, a 400 with
 * the tool's code), `timeout` (TOOL_TIMEOUT_MS), `failed` (crash or bug: `tool_failed`).
 */
export type ToolRunOutcome = 'ok' | 'tool_error' | 'timeout' | 'failed'

/** One tool run on a worker (see {@link Metrics.toolRun}). */
export interface ToolRunSample {
  tool: string
  outcome: ToolRunOutcome
  /** From its start on a worker to its end, in seconds (queue time excluded). */
  seconds: number
}

/**
 * Why the tool pool refused a call (503 `overloaded`): `admission` (pool and queue full, before
 * verify), `queue` (verified, but no worker within the queue deadline; never run, never settled).
 */
export type PoolRejectionReason = 'admission' | 'queue'

/** One Redis command (see {@link Metrics.redisCommand}). */
export interface RedisCommandSample {
  /** The command name as ioredis sends it, e.g. `set`, `evalsha`. */
  command: string
  result: 'ok' | 'error'
  /** From sending to the reply, in seconds. */
  seconds: number
}

/** One write of payment events to the telemetry store (see {@link Metrics.telemetryWrite}). */
export interface TelemetryWriteSample {
  result: 'ok' | 'error'
  /** Duration of the store's insert, in seconds. */
  seconds: number
}

/** What the gauges read at each scrape, each optional. */
export interface GaugeSources {
  /** The tool pool: calls running (busy workers), calls waiting, configured workers. */
  pool?: () => { busy: number; queued: number; workers: number }
  /** Whether the telemetry store takes writes now, and the events waiting in memory for it. */
  telemetry?: () => { up: boolean; buffered: number }
  /** Whether the shared Redis connection is ready now. */
  redis?: () => { up: boolean }
  /**
   * Settlement intents in doubt (the ledger's, outcome unknown) for more than 5 minutes, as the
   * settlement resolver last counted them (every store instance's, not only this one's).
   */
  settlements?: () => { unresolved: number }
  /**
   * The prepaid channels, as the channel manager last surveyed them: atomic USDC accepted by
   * voucher and not yet claimed, the oldest unclaimed voucher's age in seconds, and whether this
   * instance holds the manager's lease.
   */
  channels?: () => { unclaimedAtomic: string; oldestUnclaimedSeconds: number; holder: boolean }
}

/** Options of {@link createMetrics}. */
export interface MetricsOptions {
  /** The catalogue's tool ids: the only `tool` label values; anything else counts as `other`. */
  tools: readonly string[]
  /** The configured rails' CAIP-2 networks: the only `network` values; else `other`. */
  networks: readonly string[]
}

/**
 * The operator metrics of one service instance: a Prometheus registry of its own (never
 * prom-client's global one, so that several services in one process keep apart), with prom-client's
 * default process metrics (event-loop lag, heap, GC, CPU) and the metrics every layer reports into
 * through the recording functions below. Label values are bounded by construction: tools and
 * networks from the lists given at creation, enums, and the first few distinct values of the
 * labels fed from configuration or codes (more become `other`).
 */
export interface Metrics {
  readonly registry: Registry
  /**
   * Hono middleware timing every request: `http_request_duration_seconds{method, route, status,
   * ok}` (`@hono/prometheus`; `route` is the pattern of the route that answered, `/*` for
   * answers made by a middleware and for unknown paths; `method` is one of the fixed list Node's
   * HTTP parser accepts).
   */
  readonly http: MiddlewareHandler
  /**
   * Counts a paid call: `x402_payments_total{tool, network, transport, outcome, code}`.
   *
   * @example metrics.payment({ tool: 'hash', network: 'eip155:8453', transport: 'http', outcome: 'settled' })
   */
  payment(sample: PaymentSample): void
  /**
   * Adds revenue: `x402_settled_atomic_total{network}` grows by `amount` atomic USDC units.
   *
   * @example metrics.settledAtomic('eip155:8453', '1000')
   */
  settledAtomic(network: string, amount: string | bigint): void
  /**
   * Times a facilitator request: `x402_facilitator_request_duration_seconds{facilitator,
   * operation, result}`.
   */
  facilitatorRequest(sample: FacilitatorSample): void
  /** Times a tool run: `tool_run_duration_seconds{tool, outcome}`. */
  toolRun(sample: ToolRunSample): void
  /** Counts a refusal of the tool pool: `tool_pool_rejections_total{reason}`. */
  poolRejection(reason: PoolRejectionReason): void
  /** Times a Redis command: `redis_command_duration_seconds{command, result}`. */
  redisCommand(sample: RedisCommandSample): void
  /** Times a telemetry store write: `telemetry_write_duration_seconds{result}`. */
  telemetryWrite(sample: TelemetryWriteSample): void
  /** Counts a 429: `rate_limited_total`. */
  rateLimited(): void
  /**
   * Counts a channel manager transaction: `x402_channel_jobs_total{job, result}` (claim, settle,
   * refund; ok, error), and the vouchers a claim held: `x402_channel_claimed_vouchers_total`.
   */
  channelJob(job: 'claim' | 'settle' | 'refund', result: 'ok' | 'error', vouchers?: number): void
  /**
   * Sets what the gauges read at each scrape: `tool_pool_busy_workers`, `tool_pool_queue_depth`,
   * `tool_pool_workers`, `telemetry_store_up`, `telemetry_buffered_events`, `redis_up`,
   * `settlements_unresolved`, `x402_channel_unclaimed_atomic`,
   * `x402_channel_oldest_unclaimed_seconds`, `x402_channel_manager_holder`. A gauge
   * whose source is not given is not exported.
   */
  watch(sources: GaugeSources): void
  /** The exposition (Prometheus text format 0.0.4) and its content type. */
  scrape(): Promise<{ contentType: string; body: string }>
}

/** `other`: the label value of anything outside a label's known or first values. */
export const OTHER = 'other'

/** Distinct values kept per label fed from configuration or codes; further ones count as `other`. */
export const MAX_LABEL_VALUES = 64

const CODE = /^[a-z][a-z0-9_]{0,63}$/

const OUTCOMES: ReadonlySet<string> = new Set<PaymentMetricOutcome>([
  'settled',
  'settle_failed',
  'tool_failed_unsettled',
  'verify_failed',
  'replayed',
  'refused',
])

/** Seconds: paid-call facilitator round trips take from milliseconds (devnet) to seconds (chain). */
const FACILITATOR_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30]
/** Seconds: most tools take well under a millisecond; the budget is TOOL_TIMEOUT_MS (2 s). */
const TOOL_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5]
/** Seconds: a local Redis answers in a fraction of a millisecond; REDIS_TIMEOUT_MS is 0.5 s. */
const REDIS_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1]
/** Seconds: one commit (an fsync) of SQLite or PostgreSQL; the write timeout is 2 s. */
const TELEMETRY_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

/**
 * A label value from a known list, else `other`.
 *
 * @example known(new Set(['hash']))('hash') // 'hash'
 */
function known(values: readonly string[]): (value: string) => string {
  const set = new Set(values)
  return (value) => (set.has(value) ? value : OTHER)
}

/**
 * A label value that passes `valid`, among the first {@link MAX_LABEL_VALUES} distinct ones;
 * else `other`, so that no input can grow the number of series.
 */
function firstValues(valid: (value: string) => boolean = () => true): (value: string) => string {
  const seen = new Set<string>()
  return (value) => {
    if (seen.has(value)) return value
    if (!valid(value) || seen.size >= MAX_LABEL_VALUES) return OTHER
    seen.add(value)
    return value
  }
}

/**
 * Creates the metrics of one service instance (see {@link Metrics}). Counters a dashboard or an
 * alert divides or compares are created at zero for every tool, network and transport, so that
 * their series exist before the first paid call.
 *
 * @example
 * const metrics = createMetrics({ tools: catalog.map((t) => t.id), networks: ['eip155:8453'] })
 * app.use(metrics.http)
 * metrics.payment({ tool: 'hash', network: 'eip155:8453', transport: 'http', outcome: 'settled' })
 * const { contentType, body } = await metrics.scrape()
 */
export function createMetrics(options: MetricsOptions): Metrics {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })
  const registers = [registry]
  const tool = known(options.tools)
  const network = known([...options.networks, 'unknown'])
  const code = firstValues((value) => CODE.test(value))
  const facilitator = firstValues()
  const command = firstValues((value) => CODE.test(value))

  const http = prometheus({
    registry,
    // http_request_duration_seconds_count already counts the requests.
    metricOptions: { requestsTotal: { disabled: true } },
  }).registerMetrics

  const payments = new Counter({
    name: 'x402_payments_total',
    help: 'Paid calls by tool, CAIP-2 network, transport, outcome and reason code.',
    labelNames: ['tool', 'network', 'transport', 'outcome', 'code'] as const,
    registers,
  })
  const settled = new Counter({
    name: 'x402_settled_atomic_total',
    help: 'Revenue: settled amounts in atomic USDC units (6 decimals), by CAIP-2 network.',
    labelNames: ['network'] as const,
    registers,
  })
  const facilitatorDuration = new Histogram({
    name: 'x402_facilitator_request_duration_seconds',
    help: 'Facilitator requests by facilitator host, operation and result, in seconds.',
    labelNames: ['facilitator', 'operation', 'result'] as const,
    buckets: FACILITATOR_BUCKETS,
    registers,
  })
  const toolDuration = new Histogram({
    name: 'tool_run_duration_seconds',
    help: 'Tool runs on a worker by tool and outcome, in seconds (queue time excluded).',
    labelNames: ['tool', 'outcome'] as const,
    buckets: TOOL_BUCKETS,
    registers,
  })
  const rejections = new Counter({
    name: 'tool_pool_rejections_total',
    help: 'Paid calls the tool pool refused (503 overloaded), by reason: admission or queue.',
    labelNames: ['reason'] as const,
    registers,
  })
  const redisDuration = new Histogram({
    name: 'redis_command_duration_seconds',
    help: 'Redis commands by command and result, in seconds.',
    labelNames: ['command', 'result'] as const,
    buckets: REDIS_BUCKETS,
    registers,
  })
  const telemetryDuration = new Histogram({
    name: 'telemetry_write_duration_seconds',
    help: 'Writes of payment events to the telemetry store by result, in seconds.',
    labelNames: ['result'] as const,
    buckets: TELEMETRY_BUCKETS,
    registers,
  })
  const rateLimited = new Counter({
    name: 'rate_limited_total',
    help: 'Requests refused with 429 rate_limited.',
    registers,
  })

  const channelJobs = new Counter({
    name: 'x402_channel_jobs_total',
    help: 'Channel manager transactions (batch-settlement) by job (claim, settle, refund) and result.',
    labelNames: ['job', 'result'] as const,
    registers,
  })
  const claimedVouchers = new Counter({
    name: 'x402_channel_claimed_vouchers_total',
    help: 'Vouchers claimed on chain by the channel manager.',
    registers,
  })
  for (const job of ['claim', 'settle', 'refund']) {
    for (const result of ['ok', 'error']) channelJobs.inc({ job, result }, 0)
  }

  for (const n of options.networks) {
    settled.inc({ network: n }, 0)
    for (const t of options.tools) {
      for (const transport of ['http', 'mcp']) {
        payments.inc({ tool: t, network: n, transport, outcome: 'settled', code: '' }, 0)
      }
    }
  }
  for (const reason of ['admission', 'queue']) rejections.inc({ reason }, 0)

  // Each gauge is registered with its source, so that a service without Redis exports no redis_up.
  const readers = new Map<string, () => number>()
  const gauge = (name: string, help: string, read: () => number) => {
    if (!readers.has(name)) {
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set((readers.get(name) as () => number)())
        },
      })
    }
    readers.set(name, read)
  }
  const watch = (sources: GaugeSources) => {
    const { pool, telemetry, redis, settlements, channels } = sources
    if (pool) {
      gauge('tool_pool_busy_workers', 'Tool workers running a call now.', () => pool().busy)
      gauge('tool_pool_queue_depth', 'Tool calls waiting for a worker now.', () => pool().queued)
      gauge('tool_pool_workers', 'Tool workers configured (TOOL_WORKERS).', () => pool().workers)
    }
    if (telemetry) {
      gauge('telemetry_store_up', '1 while the telemetry store takes writes, else 0.', () =>
        telemetry().up ? 1 : 0,
      )
      gauge(
        'telemetry_buffered_events',
        'Payment events waiting in memory for the telemetry store.',
        () => telemetry().buffered,
      )
    }
    if (settlements) {
      gauge(
        'settlements_unresolved',
        'Settlements in doubt (sent, outcome unknown) for more than 5 minutes, as the settlement resolver last counted them in the ledger.',
        () => settlements().unresolved,
      )
    }
    if (channels) {
      gauge(
        'x402_channel_unclaimed_atomic',
        'USDC accepted by voucher and not yet claimed on chain, in atomic units (6 decimals).',
        () => Number(channels().unclaimedAtomic),
      )
      gauge(
        'x402_channel_oldest_unclaimed_seconds',
        'Age of the oldest voucher not yet claimed on chain, in seconds; 0 when none.',
        () => channels().oldestUnclaimedSeconds,
      )
      gauge(
        'x402_channel_manager_holder',
        '1 while this instance holds the channel manager lease (claims, settles, refunds), else 0.',
        () => (channels().holder ? 1 : 0),
      )
    }
    if (redis) {
      gauge('redis_up', '1 while the shared Redis connection is ready, else 0.', () =>
        redis().up ? 1 : 0,
      )
    }
  }

  return {
    registry,
    http,
    payment(sample) {
      const outcome = OUTCOMES.has(sample.outcome) ? sample.outcome : OTHER
      payments.inc({
        tool: tool(sample.tool),
        network: network(sample.network),
        transport: sample.transport === 'mcp' ? 'mcp' : 'http',
        outcome,
        code: sample.code === undefined ? '' : code(sample.code),
      })
    },
    settledAtomic(n, amount) {
      const value = Number(amount)
      if (!Number.isFinite(value) || value < 0) return
      settled.inc({ network: network(n) }, value)
    },
    facilitatorRequest(sample) {
      facilitatorDuration.observe(
        {
          facilitator: facilitator(sample.facilitator),
          operation: sample.operation,
          result: sample.result,
        },
        sample.seconds,
      )
    },
    toolRun(sample) {
      toolDuration.observe({ tool: tool(sample.tool), outcome: sample.outcome }, sample.seconds)
    },
    poolRejection(reason) {
      rejections.inc({ reason })
    },
    redisCommand(sample) {
      redisDuration.observe(
        { command: command(sample.command), result: sample.result },
        sample.seconds,
      )
    },
    telemetryWrite(sample) {
      telemetryDuration.observe({ result: sample.result }, sample.seconds)
    },
    rateLimited() {
      rateLimited.inc()
    },
    channelJob(job, result, vouchers) {
      channelJobs.inc({ job, result })
      if (vouchers) claimedVouchers.inc(vouchers)
    },
    watch,
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() }
    },
  }
}
