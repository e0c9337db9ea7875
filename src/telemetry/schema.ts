import { toBigInt, toCount } from './money.js'
import { METRIC, PAYER_COUNTER } from './rollup.js'
import { type Rollups, SCHEMES, type Tally } from './types.js'
import type { Windows } from './windows.js'

/**
 * Table names and the SQL both backends share, written once so their semantics cannot drift.
 *
 * Schema version 4 adds the x402 scheme that paid (`exact`, or `batch-settlement` for a voucher of
 * a prepaid channel): a `scheme` column on `payment_events` (default `exact`), a sixth column of
 * `usage_hourly`'s key, and the `settled_scheme` totals. Every event before it was `exact`, so
 * the upgrade marks the existing hourly rows `exact` and sums their settled rows into the totals.
 *
 * Schema version 3 adds `settlement_intents`, the write-ahead settlement ledger (ledger.ts); the
 * tables below are unchanged.
 *
 * Schema version 2 (version 1 held the events alone):
 * - `payment_events`: the raw events, kept for `TELEMETRY_RETENTION_DAYS` (default: for ever);
 *   indexed on `at` for pruning only, as nothing serving requests reads it.
 * - `usage_hourly`: per UTC hour, outcome, network, tool, transport (and scheme, version 4): calls
 *   and atomic amount. Keyed `(outcome, hour, …)`, so the settled rows of the last 168 hours are
 *   one range.
 * - `settled_hourly`: per UTC hour, the settled calls and atomic amount (usage_hourly's settled rows
 *   summed): the 24-hour and 7-day windows and the daily series read at most 168 of its rows.
 * - `usage_totals`: lifetime counters keyed `(metric, item)`, see {@link METRIC}; a bounded number
 *   of rows (outcomes, networks, tools, schemes, three payer counters).
 * - `payers`: per payer key, settled calls and the first and last settled time; read by key only.
 * - `telemetry_retention`: one row, `pruned_before` (epoch ms): raw events before it may have been
 *   deleted (0: never pruned).
 *
 * All sums are signed 64-bit integers in both backends: lifetime revenue is bounded by
 * 2^63 - 1 atomic units (about 9.2 trillion USDC), beyond which the insert fails.
 */
export const TABLE = {
  events: 'payment_events',
  hourly: 'usage_hourly',
  settledHourly: 'settled_hourly',
  totals: 'usage_totals',
  payers: 'payers',
  retention: 'telemetry_retention',
  version: 'telemetry_schema_version',
} as const

/** Indexes of schema version 1, which served the old aggregates over raw events; dropped by v2. */
export const V1_INDEXES = [
  'payment_events_outcome_payer',
  'payment_events_outcome_at',
  'payment_events_outcome_network',
  'payment_events_outcome_tool',
] as const

/** The CHECK condition of `payment_events.scheme` (schema version 4): every known scheme. */
export const SCHEME_CHECK = `scheme IN (${SCHEMES.map((scheme) => `'${scheme}'`).join(', ')})`

/** Raw events per backfill step when version 2 builds the rollups from existing events. */
export const BACKFILL_BATCH_SIZE = 50_000

/**
 * The one statement GET /stats reads: every lifetime total (a bounded number of rows) plus the
 * settled hours of the 7-day window (at most 168 rows, one primary-key range). One statement is
 * one snapshot in both backends. Parameters: `@weekFirstHour`, `@hour`.
 */
export const READ_SQL = `
  SELECT 'total' AS kind, metric, item, calls, amount FROM ${TABLE.totals}
  UNION ALL
  SELECT 'hour', 'settled', CAST(hour AS TEXT), calls, amount FROM ${TABLE.settledHourly}
  WHERE hour >= @weekFirstHour AND hour <= @hour`

/** Parameters of {@link READ_SQL}. */
export function readParams(w: Windows): Record<string, number> {
  return { weekFirstHour: w.weekFirstHour, hour: w.hour }
}

/**
 * The `settled_scheme` totals as they follow from `usage_hourly`: what the upgrade to schema
 * version 4 writes. Columns: metric, item, calls, amount.
 */
export const SCHEME_TOTALS_FROM_ROLLUPS_SQL = `SELECT '${METRIC.settledScheme}' AS metric,
    scheme AS item, SUM(calls) AS calls, SUM(amount) AS amount
  FROM ${TABLE.hourly} WHERE outcome = 'settled' GROUP BY scheme`

/**
 * Every `usage_totals` row as it follows from `usage_hourly` and `payers`: what the backfill
 * writes, and what `stats:check` compares the live totals with. Columns: metric, item, calls, amount.
 */
export const TOTALS_FROM_ROLLUPS_SQL = `
  SELECT '${METRIC.outcome}' AS metric, outcome AS item, SUM(calls) AS calls, SUM(amount) AS amount
    FROM ${TABLE.hourly} GROUP BY outcome
  UNION ALL
  SELECT '${METRIC.settledNetwork}', network, SUM(calls), SUM(amount)
    FROM ${TABLE.hourly} WHERE outcome = 'settled' GROUP BY network
  UNION ALL
  SELECT '${METRIC.settledTool}', tool, SUM(calls), SUM(amount)
    FROM ${TABLE.hourly} WHERE outcome = 'settled' GROUP BY tool
  UNION ALL
  ${SCHEME_TOTALS_FROM_ROLLUPS_SQL}
  UNION ALL
  SELECT '${METRIC.payers}', '${PAYER_COUNTER.unique}', COUNT(*), 0 FROM ${TABLE.payers}
  UNION ALL
  SELECT '${METRIC.payers}', '${PAYER_COUNTER.repeat}', COUNT(*), 0
    FROM ${TABLE.payers} WHERE settled_calls >= 2
  UNION ALL
  SELECT '${METRIC.payers}', '${PAYER_COUNTER.settledWithPayer}', COALESCE(SUM(settled_calls), 0), 0
    FROM ${TABLE.payers}`

/** Every `settled_hourly` row as it follows from `usage_hourly`. Columns: hour, calls, amount. */
export const SETTLED_HOURLY_FROM_ROLLUPS_SQL = `
  SELECT hour, SUM(calls) AS calls, SUM(amount) AS amount FROM ${TABLE.hourly}
  WHERE outcome = 'settled' GROUP BY hour`

/**
 * The hourly rollup rows of a set of raw events, `usage_hourly`'s columns; `where` is
 * the backend's batch condition (`from`: a table or CTE holding events). Used by the backfill and by `stats:check`.
 */
export function hourlyFromEventsSql(where: string, from: string = TABLE.events): string {
  return `SELECT outcome, at / 3600000 AS hour, network, tool, transport, scheme,
      COUNT(*) AS calls, SUM(amount) AS amount
    FROM ${from} WHERE ${where}
    GROUP BY outcome, at / 3600000, network, tool, transport, scheme`
}

/** The payer rows of a set of raw events, `payers`' columns; see {@link hourlyFromEventsSql}. */
export function payersFromEventsSql(where: string, from: string = TABLE.events): string {
  return `SELECT payer_key, COUNT(*) AS settled_calls, MIN(at) AS first_at, MAX(at) AS last_at
    FROM ${from}
    WHERE outcome = 'settled' AND payer_key IS NOT NULL AND (${where})
    GROUP BY payer_key`
}

/**
 * Rewrites `@name` parameters into pg's positional `$n::bigint` form (every parameter of ours is
 * an integer).
 *
 * @example
 * toPositional('hour >= @weekFirstHour AND hour <= @hour', { weekFirstHour: 1, hour: 168 })
 * // { text: 'hour >= $1::bigint AND hour <= $2::bigint', values: ['1', '168'] }
 * @throws {Error} when the statement names a parameter `params` lacks
 */
export function toPositional(
  sql: string,
  params: Record<string, number>,
): { text: string; values: string[] } {
  const names: string[] = []
  const text = sql.replace(/@([A-Za-z]\w*)/g, (_, name: string) => {
    if (!(name in params)) throw new Error(`missing SQL parameter @${name}`)
    let index = names.indexOf(name)
    if (index < 0) index = names.push(name) - 1
    return `$${index + 1}::bigint`
  })
  return { text, values: names.map((name) => String(params[name])) }
}

/**
 * Reads the rows of {@link READ_SQL} into {@link Rollups}, whatever integer form the driver used
 * (bigint, numeric string or number).
 */
export function readRollups(rows: readonly Record<string, unknown>[]): Rollups {
  const tally = (r: Record<string, unknown>): Tally => ({
    calls: toCount(r.calls),
    atomic: toBigInt(r.amount),
  })
  const rollups: Rollups = {
    outcomes: {},
    networks: [],
    tools: [],
    schemes: [],
    uniquePayers: 0,
    repeatPayers: 0,
    settledWithPayer: 0,
    hours: [],
  }
  for (const r of rows) {
    const item = String(r.item)
    if (r.kind === 'hour') {
      rollups.hours.push({ hour: toCount(item), ...tally(r) })
      continue
    }
    switch (r.metric) {
      case METRIC.outcome:
        rollups.outcomes[item] = tally(r)
        break
      case METRIC.settledNetwork:
        rollups.networks.push({ network: item, ...tally(r) })
        break
      case METRIC.settledTool:
        rollups.tools.push({ tool: item, ...tally(r) })
        break
      case METRIC.settledScheme:
        rollups.schemes.push({ scheme: item, ...tally(r) })
        break
      case METRIC.payers:
        if (item === PAYER_COUNTER.unique) rollups.uniquePayers = toCount(r.calls)
        if (item === PAYER_COUNTER.repeat) rollups.repeatPayers = toCount(r.calls)
        if (item === PAYER_COUNTER.settledWithPayer) rollups.settledWithPayer = toCount(r.calls)
        break
    }
  }
  const byName =
    <T>(pick: (x: T) => string) =>
    (a: T, b: T) =>
      pick(a) < pick(b) ? -1 : pick(a) > pick(b) ? 1 : 0
  rollups.networks.sort(byName((n) => n.network))
  rollups.tools.sort(byName((t) => t.tool))
  rollups.schemes.sort(byName((s) => s.scheme))
  rollups.hours.sort((a, b) => a.hour - b.hour)
  // Rows with zero calls can exist (a backfill writes every counter); they carry no figure.
  rollups.networks = rollups.networks.filter((n) => n.calls > 0)
  rollups.tools = rollups.tools.filter((t) => t.calls > 0)
  rollups.schemes = rollups.schemes.filter((s) => s.calls > 0)
  return rollups
}
