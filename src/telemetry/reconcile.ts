import { toBigInt, toCount } from './money.js'
import { METRIC } from './rollup.js'
import {
  hourlyFromEventsSql,
  payersFromEventsSql,
  READ_SQL,
  readParams,
  readRollups,
  SETTLED_HOURLY_FROM_ROLLUPS_SQL,
  TABLE,
  TOTALS_FROM_ROLLUPS_SQL,
} from './schema.js'
import type { SnapshotReader } from './snapshot.js'
import { buildStats } from './stats.js'
import type { Rollups, Tally } from './types.js'
import { HOUR_MS, windowsAt } from './windows.js'

/**
 * The schema version whose rollups {@link reconcile} knows how to check: 4, where the events, the
 * hourly rollups and the totals carry the scheme that paid.
 */
export const RECONCILED_SCHEMA_VERSION = 4

/** Most differences listed per comparison; the count is always complete up to this bound. */
const MAX_LISTED = 20

/** One comparison of {@link reconcile}. */
export interface Comparison {
  /** What was compared with what. */
  name: string
  /** How many figures or rows were compared. */
  compared: number
  /** One line per difference (at most {@link MAX_LISTED}, then a count of the rest). */
  differences: string[]
}

/** What {@link reconcile} found in one store. */
export interface Reconciliation {
  schemaVersion: number
  /** Retention boundary, epoch ms: raw events before it may have been pruned; 0 if never. */
  prunedBefore: number
  /** The instant the /stats figures were computed for, epoch ms. */
  now: number
  comparisons: Comparison[]
}

/** Thrown when the store is not at the schema version {@link reconcile} checks. */
export class SchemaVersionError extends Error {
  override readonly name = 'SchemaVersionError'
}

/** Leaf values of a JSON-like object by dotted path. */
function flatten(
  value: unknown,
  prefix = '',
  out = new Map<string, string>(),
): Map<string, string> {
  if (value !== null && typeof value === 'object') {
    for (const [key, child] of Object.entries(value)) {
      flatten(child, prefix ? `${prefix}.${key}` : key, out)
    }
  } else out.set(prefix, JSON.stringify(value))
  return out
}

/** Compares two maps of rendered values; a key missing on one side counts as `missing`. */
function compareMaps(
  name: string,
  rollups: ReadonlyMap<string, string>,
  raw: ReadonlyMap<string, string>,
  rawLabel = 'raw events',
): Comparison {
  const keys = [...new Set([...rollups.keys(), ...raw.keys()])].sort()
  const differences: string[] = []
  for (const key of keys) {
    const a = rollups.get(key) ?? 'missing'
    const b = raw.get(key) ?? 'missing'
    if (a !== b) differences.push(`${key}: rollups ${a}, ${rawLabel} ${b}`)
  }
  return { name, compared: keys.length, differences: capped(differences) }
}

function capped(lines: string[]): string[] {
  if (lines.length <= MAX_LISTED) return lines
  return [...lines.slice(0, MAX_LISTED), `… and ${lines.length - MAX_LISTED} more`]
}

const tallyOf = (r: Record<string, unknown>): Tally => ({
  calls: toCount(r.calls),
  atomic: toBigInt(r.amount),
})

function addTally(into: Record<string, Tally>, key: string, t: Tally): void {
  const found = into[key] ?? { calls: 0, atomic: 0n }
  into[key] = { calls: found.calls + t.calls, atomic: found.atomic + t.atomic }
}

/**
 * Recomputes what the rollups hold from the raw events (`at >= since`), completing the part
 * before `since` (pruned, if ever) from the hourly rollups of those hours, which raw events can
 * no longer confirm. Payer figures come from the raw events when nothing was ever pruned, else
 * from the `payers` rows (which the payer comparison checks against the raw events).
 */
async function rawRollups(
  reader: SnapshotReader,
  sinceHour: number,
  now: number,
): Promise<Rollups> {
  const w = windowsAt(now)
  const since = sinceHour * HOUR_MS
  const p = { since, sinceHour }
  const outcomes: Record<string, Tally> = {}
  const networks: Record<string, Tally> = {}
  const tools: Record<string, Tally> = {}
  const schemes: Record<string, Tally> = {}
  const sources = [
    { group: 'outcome', into: outcomes, settledOnly: false },
    { group: 'network', into: networks, settledOnly: true },
    { group: 'tool', into: tools, settledOnly: true },
    { group: 'scheme', into: schemes, settledOnly: true },
  ]
  for (const { group, into, settledOnly } of sources) {
    const settled = settledOnly ? `outcome = 'settled' AND` : ''
    const raw = await reader.all(
      `SELECT ${group} AS item, COUNT(*) AS calls, SUM(amount) AS amount FROM ${TABLE.events}
       WHERE ${settled} at >= @since GROUP BY ${group}`,
      p,
    )
    const pruned = await reader.all(
      `SELECT ${group} AS item, SUM(calls) AS calls, SUM(amount) AS amount FROM ${TABLE.hourly}
       WHERE ${settled} hour < @sinceHour GROUP BY ${group}`,
      p,
    )
    for (const r of [...raw, ...pruned]) addTally(into, String(r.item), tallyOf(r))
  }
  const hours: Record<string, Tally> = {}
  const rawHours = await reader.all(
    `SELECT at / ${HOUR_MS} AS hour, COUNT(*) AS calls, SUM(amount) AS amount FROM ${TABLE.events}
     WHERE outcome = 'settled' AND at >= @from AND at < @to GROUP BY at / ${HOUR_MS}`,
    { from: Math.max(since, w.weekFirstHour * HOUR_MS), to: (w.hour + 1) * HOUR_MS },
  )
  const prunedHours = await reader.all(
    `SELECT hour, SUM(calls) AS calls, SUM(amount) AS amount FROM ${TABLE.hourly}
     WHERE outcome = 'settled' AND hour >= @first AND hour < @sinceHour AND hour <= @hour
     GROUP BY hour`,
    { first: w.weekFirstHour, sinceHour, hour: w.hour },
  )
  for (const r of [...rawHours, ...prunedHours])
    addTally(hours, String(toCount(r.hour)), tallyOf(r))
  const payerSource =
    sinceHour === 0
      ? `(${payersFromEventsSql('true')}) AS raw_payers`
      : `${TABLE.payers} AS raw_payers`
  const [payers = {}] = await reader.all(
    `SELECT COUNT(*) AS unique_payers,
       COALESCE(SUM(CASE WHEN settled_calls >= 2 THEN 1 ELSE 0 END), 0) AS repeat_payers,
       COALESCE(SUM(settled_calls), 0) AS settled_with_payer
     FROM ${payerSource}`,
  )
  const sorted = <T extends string>(key: T, from: Record<string, Tally>) =>
    Object.keys(from)
      .sort()
      .filter((k) => (from[k] as Tally).calls > 0)
      .map((k) => ({ [key]: k, ...(from[k] as Tally) }) as { [K in T]: string } & Tally)
  return {
    outcomes,
    networks: sorted('network', networks),
    tools: sorted('tool', tools),
    schemes: sorted('scheme', schemes),
    uniquePayers: toCount(payers.unique_payers),
    repeatPayers: toCount(payers.repeat_payers),
    settledWithPayer: toCount(payers.settled_with_payer),
    hours: Object.entries(hours)
      .map(([hour, t]) => ({ hour: Number(hour), ...t }))
      .sort((a, b) => a.hour - b.hour),
  }
}

/** `usage_hourly` rows of the hours from `sinceHour` on, against the raw events of those hours. */
async function compareHourly(reader: SnapshotReader, sinceHour: number): Promise<Comparison> {
  const key = (r: Record<string, unknown>) =>
    [toCount(r.hour), r.outcome, r.network, r.tool, r.transport, r.scheme].join(' ')
  const render = (r: Record<string, unknown>) =>
    `${toCount(r.calls)} calls / ${toBigInt(r.amount)} atomic`
  const rollups = await reader.all(
    `SELECT outcome, hour, network, tool, transport, scheme, calls, amount FROM ${TABLE.hourly}
     WHERE hour >= @sinceHour`,
    { sinceHour },
  )
  const raw = await reader.all(hourlyFromEventsSql('at >= @since'), { since: sinceHour * HOUR_MS })
  return compareMaps(
    'usage_hourly rows vs raw events (hour, outcome, network, tool, transport, scheme)',
    new Map(rollups.filter((r) => toCount(r.calls) > 0).map((r) => [key(r), render(r)])),
    new Map(raw.map((r) => [key(r), render(r)])),
  )
}

/**
 * `payers` rows against the settled raw events of each payer key. Payers whose first settled call
 * is on or after the retention boundary must match exactly; for older ones the raw events can only
 * confirm the last call and that no more calls remain than the row counts.
 */
async function comparePayers(reader: SnapshotReader, since: number): Promise<Comparison> {
  const mismatches = await reader.all(
    `SELECT COALESCE(r.payer_key, p.payer_key) AS payer_key,
       r.settled_calls AS raw_calls, r.first_at AS raw_first, r.last_at AS raw_last,
       p.settled_calls AS calls, p.first_at AS first_at, p.last_at AS last_at
     FROM (${payersFromEventsSql('true')}) AS r
     FULL OUTER JOIN ${TABLE.payers} AS p ON p.payer_key = r.payer_key
     WHERE p.payer_key IS NULL
       OR (p.first_at >= @since AND (r.payer_key IS NULL OR r.settled_calls <> p.settled_calls
           OR r.first_at <> p.first_at OR r.last_at <> p.last_at))
       OR (p.first_at < @since AND ((r.payer_key IS NULL AND p.last_at >= @since)
           OR r.settled_calls > p.settled_calls OR r.last_at <> p.last_at))
     ORDER BY 1
     LIMIT ${MAX_LISTED + 1}`,
    { since },
  )
  const [count = {}] = await reader.all(`SELECT COUNT(*) AS n FROM ${TABLE.payers}`)
  const describe = (calls: unknown, first: unknown, last: unknown) =>
    calls === null || calls === undefined
      ? 'missing'
      : `${toCount(calls)} settled, first ${toCount(first)}, last ${toCount(last)}`
  const differences = mismatches.map(
    (m) =>
      // A payer key is an HMAC, never an address; a prefix is enough to find the row.
      `payer ${String(m.payer_key).slice(0, 12)}…: rollups ${describe(m.calls, m.first_at, m.last_at)}, raw events ${describe(m.raw_calls, m.raw_first, m.raw_last)}`,
  )
  if (differences.length > MAX_LISTED) {
    differences.splice(MAX_LISTED, Number.POSITIVE_INFINITY, '… and more')
  }
  return {
    name: 'payers rows vs raw settled events per payer key',
    compared: toCount(count.n),
    differences,
  }
}

/** `settled_hourly` against the settled rows of `usage_hourly`, hour by hour. */
async function compareSettledHours(reader: SnapshotReader): Promise<Comparison> {
  const render = (rows: Record<string, unknown>[]) =>
    new Map(
      rows
        .filter((r) => toCount(r.calls) > 0)
        .map((r) => [
          `hour ${toCount(r.hour)}`,
          `${toCount(r.calls)} calls / ${toBigInt(r.amount)} atomic`,
        ]),
    )
  return compareMaps(
    'settled_hourly vs the settled rows of usage_hourly (all history)',
    render(await reader.all(`SELECT hour, calls, amount FROM ${TABLE.settledHourly}`)),
    render(await reader.all(SETTLED_HOURLY_FROM_ROLLUPS_SQL)),
    'usage_hourly',
  )
}

/** `usage_totals` against the totals that follow from `usage_hourly` and `payers`. */
async function compareTotals(reader: SnapshotReader): Promise<Comparison> {
  const render = (rows: Record<string, unknown>[]) =>
    new Map(
      rows
        .filter((r) => toCount(r.calls) > 0 || toBigInt(r.amount) !== 0n)
        .map((r) => [
          `${r.metric}/${r.item}`,
          r.metric === METRIC.payers
            ? String(toCount(r.calls))
            : `${toCount(r.calls)} calls / ${toBigInt(r.amount)} atomic`,
        ]),
    )
  const live = await reader.all(`SELECT metric, item, calls, amount FROM ${TABLE.totals}`)
  const derived = await reader.all(TOTALS_FROM_ROLLUPS_SQL)
  return compareMaps(
    'usage_totals vs the sums of usage_hourly and payers (all history)',
    render(live),
    render(derived),
    'usage_hourly/payers',
  )
}

/**
 * Recomputes every GET /stats figure from the raw events and compares it with what the rollups
 * say, then compares the rollup tables row by row with the raw events and with each other. Within
 * the retention window the raw events are the authority; hours before the retention boundary
 * (`telemetry_retention.pruned_before`) can only be checked for internal consistency.
 *
 * @example
 * const reader = await openSnapshot(storeLocation(process.env.DATABASE_URL))
 * const result = await reconcile(reader)
 * result.comparisons.every((c) => c.differences.length === 0) // true when the rollups are right
 * @param reader - a snapshot of the store (all reads see one state)
 * @param now - the instant the /stats figures are computed for, epoch ms
 * @throws {SchemaVersionError} when the store is not at schema version
 *   {@link RECONCILED_SCHEMA_VERSION} (start the service once to migrate it)
 */
export async function reconcile(reader: SnapshotReader, now = Date.now()): Promise<Reconciliation> {
  const versions = await reader
    .all(`SELECT MAX(version) AS v FROM ${TABLE.version}`)
    .catch(() => [] as Record<string, unknown>[])
  const schemaVersion = toCount(versions[0]?.v ?? 0)
  if (schemaVersion !== RECONCILED_SCHEMA_VERSION) {
    throw new SchemaVersionError(
      `store is at schema version ${schemaVersion}, stats:check reads version ${RECONCILED_SCHEMA_VERSION}` +
        ' (start the service once to migrate it)',
    )
  }
  const [retention = {}] = await reader.all(`SELECT pruned_before FROM ${TABLE.retention}`)
  const prunedBefore = toCount(retention.pruned_before)
  // Only whole hours are compared with raw events: the hour the boundary falls in may be partial.
  const sinceHour = Math.ceil(prunedBefore / HOUR_MS)
  const w = windowsAt(now)
  const fromRollups = buildStats(readRollups(await reader.all(READ_SQL, readParams(w))), w, 0)
  const fromRaw = buildStats(await rawRollups(reader, sinceHour, now), w, 0)
  const figures = (s: typeof fromRaw) => {
    const { generated_at: _g, window: _w, ...rest } = s
    return flatten(rest)
  }
  const statsName =
    prunedBefore === 0
      ? '/stats figures recomputed from raw events'
      : '/stats figures recomputed from raw events since the retention boundary (earlier hours from usage_hourly; payer figures from payers)'
  return {
    schemaVersion,
    prunedBefore,
    now,
    comparisons: [
      compareMaps(statsName, figures(fromRollups), figures(fromRaw)),
      await compareHourly(reader, sinceHour),
      await comparePayers(reader, sinceHour * HOUR_MS),
      await compareSettledHours(reader),
      await compareTotals(reader),
    ],
  }
}
