/**
 * Outcome of one paid attempt. The caller records `verified` after a successful facilitator verify,
 * then exactly one of the other three: `settled` (settled and answered 200), `settle_failed`
 * (settle failed, result withheld) or `tool_failed_unsettled` (the tool failed, nothing settled).
 */
export type Outcome = 'verified' | 'settled' | 'settle_failed' | 'tool_failed_unsettled'

/** Every outcome, in the order the caller meets them. */
export const OUTCOMES: readonly Outcome[] = [
  'verified',
  'settled',
  'settle_failed',
  'tool_failed_unsettled',
]

/** Transport a paid call came in on. */
export type Transport = 'http' | 'mcp'

/**
 * One payment event as the caller hands it to `Telemetry.record`.
 *
 * @example
 * { tool: 'json-validate', transport: 'http', network: 'eip155:8453', amount: '1000',
 *   outcome: 'settled', payer: '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B' }
 */
export interface PaymentEvent {
  /** Tool id, e.g. `json-validate`. */
  tool: string
  transport: Transport
  /** CAIP-2 network of the rail that paid, e.g. `eip155:8453`. */
  network: string
  /** Price in atomic USDC units (6 decimals) as a decimal string, e.g. `'1000'` = 0.001 USDC. */
  amount: string
  outcome: Outcome
  /**
   * Raw payer address (EVM hex or Solana base58). It is hashed into a payer key at once and never
   * stored, buffered or logged.
   */
  payer?: string
  /** Event time in epoch milliseconds; defaults to the telemetry clock's now. */
  at?: number
}

/**
 * A payment event ready for storage: the payer already replaced by its HMAC key, and a random
 * UUID `id` that makes the insert idempotent under retry.
 */
export interface EventRow {
  /** Random UUID v4. */
  id: string
  /** Epoch milliseconds. */
  at: number
  tool: string
  transport: Transport
  network: string
  /** Atomic USDC units, decimal string of a non-negative 64-bit integer. */
  amount: string
  outcome: Outcome
  /** HMAC-SHA-256(salt, lower-cased address) as lower-case hex, or null when no payer was given. */
  payerKey: string | null
}

/** Atomic USDC amount in both notations. */
export interface Money {
  /** Atomic units (6 decimals) as a decimal string, e.g. `'3000'`. */
  atomic: string
  /** Exact USDC decimal string, trailing zeros trimmed, e.g. `'0.003'`; `'0'` when zero. */
  usdc: string
}

/** One UTC calendar day of settled events, for the landing page chart. */
export interface DailyPoint {
  /** UTC date, `YYYY-MM-DD`. */
  date: string
  calls: number
  revenue: Money
}

/**
 * Response body of GET /stats: aggregate figures only, no payer or transaction identifiers
 * (SPEC section 2.3).
 */
export interface Stats {
  /** Count of `verified` events: verified paid attempts. */
  paid_calls: number
  /** Count of `settled` events: settled and answered 200. */
  successful_paid_calls: number
  /** Distinct payer keys among settled events. */
  unique_payers: number
  /** Payers with two or more settled events. */
  repeat_payers: number
  /** Settled events after each payer's first (settled events with a payer minus unique payers). */
  repeat_paid_calls: number
  /** `repeat_paid_calls / successful_paid_calls`; 0 when there are no settled events. */
  repeat_call_rate: number
  /** Sums of settled amounts. */
  revenue: { lifetime: Money; last_24h: Money; last_7d: Money }
  /** Settled events per CAIP-2 network; only networks that have any. */
  networks: Record<string, { calls: number; revenue: Money }>
  /** Settled events per tool id; only tools that have any. */
  tools: Record<string, { calls: number }>
  /** Exactly 7 entries, oldest first, ending today (UTC), zero-filled. */
  daily: DailyPoint[]
  /** ISO-8601 time the figures were computed. */
  generated_at: string
  /** Plain-language window definitions and the cache lifetime in seconds. */
  window: { last_24h: string; last_7d: string; daily: string; cache_seconds: number }
}

/**
 * Raw aggregate figures as each backend computes them with SQL; `buildStats` shapes them into
 * {@link Stats}. Counts are plain numbers, sums are atomic units as bigint.
 */
export interface Aggregates {
  verified: number
  settled: number
  /** Settled events that carry a payer key. */
  settledWithPayer: number
  uniquePayers: number
  repeatPayers: number
  revenueLifetime: bigint
  revenue24h: bigint
  revenue7d: bigint
  networks: { network: string; calls: number; atomic: bigint }[]
  tools: { tool: string; calls: number }[]
  /** `day` is the UTC day number, `floor(epoch ms / 86_400_000)`. */
  daily: { day: number; calls: number; atomic: bigint }[]
}

/** Time boundaries (epoch ms) for one aggregate query, all derived from one `now`. */
export interface Windows {
  now: number
  /** `now - 24h`; the 24-hour window is `(dayAgo, now]`. */
  dayAgo: number
  /** `now - 7d`; the 7-day window is `(weekAgo, now]`. */
  weekAgo: number
  /** 00:00 UTC six days before today; the daily series covers `[dailyStart, now]`. */
  dailyStart: number
}

/**
 * One storage backend. Implementations keep every operation bounded in time (see each backend)
 * and throw on any storage failure; the facade turns failures into buffering.
 */
export interface TelemetryStore {
  readonly backend: 'sqlite' | 'postgres'
  /** Creates or upgrades the schema; idempotent and safe to run from several instances at once. */
  migrate(): Promise<void>
  /** Inserts rows in one transaction, ignoring ids already stored; resolves once committed. */
  insert(rows: readonly EventRow[]): Promise<void>
  /** Computes the raw aggregates in the database. */
  aggregate(windows: Windows): Promise<Aggregates>
  /** Cheap round trip proving the store answers. */
  ping(): Promise<void>
  /** Releases connections or file handles. */
  close(): Promise<void>
}

/**
 * Thrown by `Telemetry.stats()` when the telemetry storage cannot answer or events are waiting in
 * the buffer (the figures would be incomplete). The HTTP layer maps it to 503
 * `telemetry_unavailable`.
 */
export class TelemetryUnavailableError extends Error {
  override readonly name = 'TelemetryUnavailableError'
  readonly code = 'telemetry_unavailable'
  constructor(message = 'telemetry storage is temporarily unavailable', options?: ErrorOptions) {
    super(message, options)
  }
}
