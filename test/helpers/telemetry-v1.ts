import Database from 'better-sqlite3'
import pg from 'pg'
import { money, toBigInt, toCount } from '../../src/telemetry/money.js'
import type { SnapshotReader } from '../../src/telemetry/snapshot.js'
import type { EventRow, Stats } from '../../src/telemetry/types.js'

// Telemetry schema version 1 frozen as it shipped (commit c845a5b): its DDL, its insert and its
// /stats aggregates over the raw events. The migration test builds real version-1 stores with it
// and compares the figures version 1 answered with those the rollups answer after the upgrade;
// the telemetry benchmark times the version-1 aggregates as the "before" figures.
// Do not "fix" this file to follow the current code: it is the old code.

const INDEXES_SQL = `
  CREATE INDEX IF NOT EXISTS payment_events_outcome_payer ON payment_events (outcome, payer_key);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_at ON payment_events (outcome, at, amount);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_network
    ON payment_events (outcome, network, amount);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_tool ON payment_events (outcome, tool);`

/** Version-1 DDL of the SQLite backend, verbatim. */
export const V1_SQLITE_DDL = `CREATE TABLE IF NOT EXISTS payment_events (
    id TEXT PRIMARY KEY,
    at INTEGER NOT NULL,
    tool TEXT NOT NULL,
    transport TEXT NOT NULL CHECK (transport IN ('http', 'mcp')),
    network TEXT NOT NULL,
    amount INTEGER NOT NULL CHECK (amount >= 0),
    outcome TEXT NOT NULL
      CHECK (outcome IN ('verified', 'settled', 'settle_failed', 'tool_failed_unsettled')),
    payer_key TEXT
  ) STRICT;
  ${INDEXES_SQL}`

/** Version-1 DDL of the PostgreSQL backend, verbatim. */
export const V1_POSTGRES_DDL = `CREATE TABLE IF NOT EXISTS payment_events (
    id uuid PRIMARY KEY,
    at bigint NOT NULL,
    tool text NOT NULL,
    transport text NOT NULL CHECK (transport IN ('http', 'mcp')),
    network text NOT NULL,
    amount bigint NOT NULL CHECK (amount >= 0),
    outcome text NOT NULL
      CHECK (outcome IN ('verified', 'settled', 'settle_failed', 'tool_failed_unsettled')),
    payer_key text
  );
  ${INDEXES_SQL}`

/** The version-1 indexes, for the benchmark's "before" measurement on a version-2 store. */
export const V1_INDEXES_SQL = INDEXES_SQL

const DAY_MS = 86_400_000

/** Builds a version-1 SQLite store at `path` holding `rows`, as version-1 code wrote it. */
export function createV1Sqlite(path: string, rows: readonly EventRow[]): void {
  const db = new Database(path)
  try {
    db.pragma('journal_mode = WAL')
    db.exec('CREATE TABLE IF NOT EXISTS telemetry_schema_version (version INTEGER NOT NULL)')
    db.exec(V1_SQLITE_DDL)
    db.prepare('INSERT INTO telemetry_schema_version (version) VALUES (?)').run(1)
    const statement = db.prepare(
      `INSERT INTO payment_events (id, at, tool, transport, network, amount, outcome, payer_key)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
    )
    db.transaction(() => {
      for (const r of rows) {
        statement.run(
          r.id,
          BigInt(r.at),
          r.tool,
          r.transport,
          r.network,
          BigInt(r.amount),
          r.outcome,
          r.payerKey,
        )
      }
    })()
  } finally {
    db.close()
  }
}

/** Builds a version-1 PostgreSQL store in the connection's `search_path` holding `rows`. */
export async function createV1Postgres(url: string, rows: readonly EventRow[]): Promise<void> {
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query(
      'CREATE TABLE IF NOT EXISTS telemetry_schema_version (version integer NOT NULL)',
    )
    await client.query(V1_POSTGRES_DDL)
    await client.query('INSERT INTO telemetry_schema_version (version) VALUES ($1)', [1])
    await client.query(
      `INSERT INTO payment_events (id, at, tool, transport, network, amount, outcome, payer_key)
       SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[],
                            $6::bigint[], $7::text[], $8::text[])
       ON CONFLICT (id) DO NOTHING`,
      [
        rows.map((r) => r.id),
        rows.map((r) => String(r.at)),
        rows.map((r) => r.tool),
        rows.map((r) => r.transport),
        rows.map((r) => r.network),
        rows.map((r) => r.amount),
        rows.map((r) => r.outcome),
        rows.map((r) => r.payerKey),
      ],
    )
  } finally {
    await client.end()
  }
}

/** The version-1 aggregate queries over the raw events, verbatim (`@name` window parameters). */
function v1AggregateSql() {
  const settled = `outcome = 'settled'`
  return {
    outcomes: `SELECT outcome, COUNT(*) AS calls FROM payment_events GROUP BY outcome`,
    payers: `SELECT
        COUNT(*) AS unique_payers,
        COALESCE(SUM(CASE WHEN calls >= 2 THEN 1 ELSE 0 END), 0) AS repeat_payers,
        COALESCE(SUM(calls), 0) AS settled_with_payer
      FROM (
        SELECT payer_key, COUNT(*) AS calls FROM payment_events
        WHERE ${settled} AND payer_key IS NOT NULL
        GROUP BY payer_key
      ) AS payers`,
    revenue: `SELECT
        COALESCE(SUM(amount), 0) AS lifetime,
        COALESCE(SUM(amount) FILTER (WHERE at > @dayAgo AND at <= @now), 0) AS last_24h,
        COALESCE(SUM(amount) FILTER (WHERE at > @weekAgo AND at <= @now), 0) AS last_7d
      FROM payment_events WHERE ${settled}`,
    networks: `SELECT network, COUNT(*) AS calls, SUM(amount) AS atomic
      FROM payment_events WHERE ${settled} GROUP BY network ORDER BY network`,
    tools: `SELECT tool, COUNT(*) AS calls
      FROM payment_events WHERE ${settled} GROUP BY tool ORDER BY tool`,
    daily: `SELECT at / ${DAY_MS} AS day, COUNT(*) AS calls, SUM(amount) AS atomic
      FROM payment_events
      WHERE ${settled} AND at >= @dailyStart AND at <= @now
      GROUP BY at / ${DAY_MS} ORDER BY day`,
  }
}

/**
 * The /stats figures version 1 answered, without `generated_at` and `window`. Version 1 had no
 * `channels` (every payment was `exact`).
 */
export type V1Figures = Omit<Stats, 'generated_at' | 'window' | 'channels'>

/**
 * Computes the /stats figures exactly as version 1 did: its aggregate queries over the raw events,
 * windows exact to the millisecond (`(now-24h, now]`, `(now-7d, now]`), then its shaping.
 */
export async function v1Figures(reader: SnapshotReader, now: number): Promise<V1Figures> {
  const today = Math.floor(now / DAY_MS)
  const windows = {
    now,
    dayAgo: now - DAY_MS,
    weekAgo: now - 7 * DAY_MS,
    dailyStart: (today - 6) * DAY_MS,
  }
  const rows: Record<string, Record<string, unknown>[]> = {}
  for (const [name, sql] of Object.entries(v1AggregateSql())) {
    const used = Object.fromEntries(
      Object.entries(windows).filter(([key]) => sql.includes(`@${key}`)),
    )
    rows[name] = await reader.all(sql, used)
  }
  const outcome = (name: string) => toCount(rows.outcomes?.find((r) => r.outcome === name)?.calls)
  const [payers = {}] = rows.payers ?? []
  const [revenue = {}] = rows.revenue ?? []
  const settled = outcome('settled')
  const uniquePayers = toCount(payers.unique_payers)
  const repeatPaidCalls = toCount(payers.settled_with_payer) - uniquePayers
  const byDay = new Map((rows.daily ?? []).map((d) => [toCount(d.day), d]))
  const daily = Array.from({ length: 7 }, (_, i) => {
    const day = today - 6 + i
    const found = byDay.get(day)
    return {
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      calls: toCount(found?.calls),
      revenue: money(toBigInt(found?.atomic)),
    }
  })
  return {
    paid_calls: outcome('verified'),
    successful_paid_calls: settled,
    unique_payers: uniquePayers,
    repeat_payers: toCount(payers.repeat_payers),
    repeat_paid_calls: repeatPaidCalls,
    repeat_call_rate: settled === 0 ? 0 : repeatPaidCalls / settled,
    revenue: {
      lifetime: money(toBigInt(revenue.lifetime)),
      last_24h: money(toBigInt(revenue.last_24h)),
      last_7d: money(toBigInt(revenue.last_7d)),
    },
    networks: Object.fromEntries(
      (rows.networks ?? []).map((n) => [
        String(n.network),
        { calls: toCount(n.calls), revenue: money(toBigInt(n.atomic)) },
      ]),
    ),
    tools: Object.fromEntries(
      (rows.tools ?? []).map((t) => [String(t.tool), { calls: toCount(t.calls) }]),
    ),
    daily,
  }
}
