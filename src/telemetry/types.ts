import type { LedgerDecision, SettlementLedger } from './ledger.js'
import type { Windows } from './windows.js'

/**
 * Outcome of one paid attempt. The caller records `verified` after a successful facilitator verify,
 * then exactly one of the other three: `settled` (settled and answered 200), `settle_failed`
 * (settle failed, result withheld) or `tool_failed_unsettled` (the tool failed, nothing settled).
 */
export type Outcome = 'verified' | 'settled' | 'settle_failed' | 'tool_failed_unsettled'

/**
 * Every outcome, in the order the caller meets them. The rollups key their rows by outcome name,
 * so a new outcome needs no rollup schema change (only the events table's CHECK constraint).
 */
export const OUTCOMES: readonly Outcome[] = [
  'verified',
  'settled',
  'settle_failed',
  'tool_failed_unsettled',
]

/** Transport a paid call came in on. */
export type Transport = 'http' | 'mcp'

/**
 * The x402 scheme that paid a call: `exact` (one signed transfer per call, settled on chain) or
 * `batch-settlement` (a voucher against a prepaid channel's deposit, checked locally and claimed
 * later in batches).
 */
export type Scheme = 'exact' | 'batch-settlement'

/** Every {@link Scheme}, for validation and the events table's CHECK constraint. */
export const SCHEMES: readonly Scheme[] = ['exact', 'batch-settlement']

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
  /** The scheme that paid; absent means `exact`. A voucher call is `batch-settlement`. */
  scheme?: Scheme
  /**
   * Raw payer address (EVM hex or Solana base58). It is hashed into a payer key at once and never
   * stored, buffered or logged.
   */
  payer?: string
  /** Event time in epoch milliseconds; defaults to the telemetry clock's now. */
  at?: number
  /**
   * A lower-case UUID naming the event, when it may be recorded more than once (a settlement's
   * outcome: `settlementEventId`); the store keeps one row per id. Default: a fresh one.
   */
  id?: string
  /**
   * The ledger outcome this event records (a paid call's own settlement): written in the same
   * transaction as the event, so that one commit holds both. Never stored in the event row.
   */
  decides?: LedgerDecisionWrite
}

/** An intent's outcome to write beside an event: `SettlementLedger.decide`'s arguments. */
export interface LedgerDecisionWrite {
  /** The payment's guard key. */
  key: string
  decision: LedgerDecision
}

/**
 * A payment event ready for storage: the payer already replaced by its HMAC key, and a UUID `id`
 * (version 7, time-ordered) that makes the insert idempotent under retry.
 */
export interface EventRow {
  /** UUID (version 7 from `toEventRow`; any UUID is accepted). */
  id: string
  /** Epoch milliseconds. */
  at: number
  tool: string
  transport: Transport
  network: string
  /** Atomic USDC units, decimal string of a non-negative 64-bit integer. */
  amount: string
  outcome: Outcome
  /** The scheme that paid; absent means `exact` (rows written before the scheme existed). */
  scheme?: Scheme
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
  /**
   * Sums of settled amounts. The windows are exact to the hour: `last_24h` is the current UTC hour
   * so far plus the 23 whole hours before it, `last_7d` the current hour plus the 167 before it.
   */
  revenue: { lifetime: Money; last_24h: Money; last_7d: Money }
  /** Settled events per CAIP-2 network; only networks that have any. */
  networks: Record<string, { calls: number; revenue: Money }>
  /** Settled events per tool id; only tools that have any. */
  tools: Record<string, { calls: number }>
  /**
   * Settled events paid by a voucher of a prepaid channel (scheme `batch-settlement`), lifetime,
   * in aggregate only: they are also counted in `successful_paid_calls` and `revenue`.
   */
  channels: {
    calls: number
    revenue: Money
    /** `calls / successful_paid_calls`; 0 when there are no settled events. */
    share_of_calls: number
  }
  /** Exactly 7 entries, oldest first, ending today (UTC), zero-filled. */
  daily: DailyPoint[]
  /** ISO-8601 time the figures were computed. */
  generated_at: string
  /** Plain-language window definitions and the cache lifetime in seconds. */
  window: { last_24h: string; last_7d: string; daily: string; cache_seconds: number }
}

/** A count and an atomic USDC sum. */
export interface Tally {
  calls: number
  /** Atomic USDC units. */
  atomic: bigint
}

/**
 * What GET /stats is computed from, as each backend reads it from its rollup tables (never from
 * the raw events): lifetime totals, which are a bounded number of rows, and the settled events of
 * the hours the windows cover (at most 168 rows). `buildStats` shapes them
 * into {@link Stats}.
 */
export interface Rollups {
  /** Lifetime events per outcome; outcomes without events are absent. */
  outcomes: Record<string, Tally>
  /** Lifetime settled events per CAIP-2 network, by network. */
  networks: ({ network: string } & Tally)[]
  /** Lifetime settled events per tool id, by tool. */
  tools: ({ tool: string } & Tally)[]
  /** Lifetime settled events per {@link Scheme}, by scheme. */
  schemes: ({ scheme: string } & Tally)[]
  /** Payers with at least one settled event. */
  uniquePayers: number
  /** Payers with two or more settled events. */
  repeatPayers: number
  /** Settled events that carry a payer key. */
  settledWithPayer: number
  /**
   * Settled events per UTC hour (`floor(at / 3_600_000)`) for the hours
   * `[weekFirstHour, hour]` of the windows read; hours without events are absent.
   */
  hours: ({ hour: number } & Tally)[]
}

/**
 * One storage backend. Implementations keep every operation bounded in time (see each backend)
 * and throw on any storage failure; the facade turns failures into buffering.
 */
export interface TelemetryStore {
  readonly backend: 'sqlite' | 'postgres'
  /**
   * Creates or upgrades the schema, backfilling the rollups from existing events when it adds
   * them; idempotent and safe to run from several instances at once.
   */
  migrate(): Promise<void>
  /**
   * Inserts rows and updates the rollups in one transaction, ignoring ids already stored (their
   * rollups are not counted twice), with the ledger outcomes in `decisions` (each as
   * `SettlementLedger.decide` writes it) in the same transaction; resolves once committed and
   * durable.
   */
  insert(rows: readonly EventRow[], decisions?: readonly LedgerDecisionWrite[]): Promise<void>
  /** Reads the rollups for the windows; cost independent of the number of events. */
  read(windows: Windows): Promise<Rollups>
  /**
   * Deletes at most `limit` raw events with `at < before` (epoch ms) and records `before` as the
   * retention boundary; the rollups are untouched, so no /stats figure changes.
   *
   * @returns the number of events deleted; fewer than `limit` means none older remain
   */
  prune(before: number, limit: number): Promise<number>
  /** Cheap round trip proving the store answers. */
  ping(): Promise<void>
  /** The write-ahead settlement ledger in this store (ledger.ts); absent in test doubles. */
  readonly ledger?: SettlementLedger
  /** Releases connections, file handles and threads. */
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
