import pg from 'pg'
import { logger } from '../logger.js'
import {
  entryOf,
  intendSql,
  LEDGER_COLUMNS,
  LEDGER_TABLE,
  ledgerDdl,
  type SettlementLedger,
} from './ledger.js'
import {
  INSERT_BATCH_MAX_ROWS,
  MIGRATE_STEP_TIMEOUT_MS,
  READ_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
} from './limits.js'
import { mergeTotals, payerCounterDeltas, rollupDelta } from './rollup.js'
import {
  BACKFILL_BATCH_SIZE,
  hourlyFromEventsSql,
  payersFromEventsSql,
  READ_SQL,
  readParams,
  readRollups,
  SCHEME_CHECK,
  SCHEME_TOTALS_FROM_ROLLUPS_SQL,
  SETTLED_HOURLY_FROM_ROLLUPS_SQL,
  TABLE,
  TOTALS_FROM_ROLLUPS_SQL,
  toPositional,
  V1_INDEXES,
} from './schema.js'
import type { EventRow, LedgerDecisionWrite, TelemetryStore } from './types.js'
import { createWriteQueue } from './write-queue.js'

/** Connections per instance; many instances share one database, so keep it small. */
const POOL_SIZE = 4

/** `pg_advisory_xact_lock` key serialising migrations across instances starting together. */
const MIGRATION_LOCK_KEY = 7_402_001

/** Schema version 1, unchanged since it shipped: the events and the indexes of the old aggregates. */
const V1_DDL = `CREATE TABLE IF NOT EXISTS ${TABLE.events} (
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
  CREATE INDEX IF NOT EXISTS payment_events_outcome_payer ON payment_events (outcome, payer_key);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_at ON payment_events (outcome, at, amount);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_network
    ON payment_events (outcome, network, amount);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_tool ON payment_events (outcome, tool);`

/** Schema version 2: the rollups (see schema.ts). */
const V2_DDL = `
  CREATE TABLE ${TABLE.hourly} (
    outcome text NOT NULL,
    hour bigint NOT NULL,
    network text NOT NULL,
    tool text NOT NULL,
    transport text NOT NULL,
    calls bigint NOT NULL,
    amount bigint NOT NULL,
    PRIMARY KEY (outcome, hour, network, tool, transport)
  );
  CREATE TABLE ${TABLE.settledHourly} (
    hour bigint PRIMARY KEY,
    calls bigint NOT NULL,
    amount bigint NOT NULL
  );
  CREATE TABLE ${TABLE.totals} (
    metric text NOT NULL,
    item text NOT NULL,
    calls bigint NOT NULL,
    amount bigint NOT NULL,
    PRIMARY KEY (metric, item)
  );
  CREATE TABLE ${TABLE.payers} (
    payer_key text PRIMARY KEY,
    settled_calls bigint NOT NULL,
    first_at bigint NOT NULL,
    last_at bigint NOT NULL
  );
  CREATE TABLE ${TABLE.retention} (
    id integer PRIMARY KEY CHECK (id = 1),
    pruned_before bigint NOT NULL
  );
  INSERT INTO ${TABLE.retention} (id, pruned_before) VALUES (1, 0);
  ${V1_INDEXES.map((name) => `DROP INDEX IF EXISTS ${name};`).join('\n  ')}
  CREATE INDEX ${TABLE.events}_at ON ${TABLE.events} (at);`

/**
 * Schema version 4: the scheme that paid (see schema.ts). Adding a column with a constant default
 * rewrites no row; `usage_hourly`'s key gains `scheme`, every existing row `exact`.
 */
const V4_DDL = `
  ALTER TABLE ${TABLE.events}
    ADD COLUMN scheme text NOT NULL DEFAULT 'exact' CHECK (${SCHEME_CHECK});
  ALTER TABLE ${TABLE.hourly} ADD COLUMN scheme text NOT NULL DEFAULT 'exact';
  ALTER TABLE ${TABLE.hourly} ALTER COLUMN scheme DROP DEFAULT,
    DROP CONSTRAINT ${TABLE.hourly}_pkey,
    ADD PRIMARY KEY (outcome, hour, network, tool, transport, scheme);
  INSERT INTO ${TABLE.totals} (metric, item, calls, amount)
    SELECT metric, item, calls, amount FROM (${SCHEME_TOTALS_FROM_ROLLUPS_SQL}) AS derived;`

const HOURLY_UPSERT = `ON CONFLICT (outcome, hour, network, tool, transport, scheme) DO UPDATE SET
    calls = ${TABLE.hourly}.calls + excluded.calls,
    amount = ${TABLE.hourly}.amount + excluded.amount`

const PAYER_UPSERT = `ON CONFLICT (payer_key) DO UPDATE SET
    settled_calls = ${TABLE.payers}.settled_calls + excluded.settled_calls,
    first_at = LEAST(${TABLE.payers}.first_at, excluded.first_at),
    last_at = GREATEST(${TABLE.payers}.last_at, excluded.last_at)`

/**
 * One backfill step over the events after `$1` in id order: adds their hourly and payer rollups
 * and returns the last id of the batch and its size. Data-modifying CTEs run exactly once each.
 */
function backfillStepSql(first: boolean, batchSize: number): string {
  const batch = `SELECT * FROM ${TABLE.events} ${first ? '' : 'WHERE id > $1::uuid'}
    ORDER BY id LIMIT ${Math.floor(batchSize)}`
  return `WITH batch AS (${batch}),
    hourly AS (
      INSERT INTO ${TABLE.hourly} (outcome, hour, network, tool, transport, scheme, calls, amount)
      ${hourlyFromEventsSql('true', 'batch')} ${HOURLY_UPSERT}),
    payer_rows AS (
      INSERT INTO ${TABLE.payers} (payer_key, settled_calls, first_at, last_at)
      ${payersFromEventsSql('true', 'batch')} ${PAYER_UPSERT})
    SELECT (SELECT id::text FROM batch ORDER BY id DESC LIMIT 1) AS last,
           (SELECT COUNT(*) FROM batch)::int AS n`
}

/**
 * Builds the rollups from the events a version-1 store holds, in batches of `batchSize` ids, then
 * the totals from the rollups. Runs once every migration is applied, so it reads and writes the
 * current columns.
 */
async function backfill(
  client: pg.PoolClient,
  batchSize: number,
  progress: () => void,
): Promise<void> {
  let last: string | undefined
  for (;;) {
    const sql = backfillStepSql(last === undefined, batchSize)
    const { rows } = await client.query(sql, last ? [last] : [])
    progress()
    const step = rows[0] as { last: string | null; n: number }
    if (step.n < batchSize || step.last === null) break
    last = step.last
  }
  await client.query(
    `INSERT INTO ${TABLE.settledHourly} (hour, calls, amount)
     SELECT hour, calls, amount FROM (${SETTLED_HOURLY_FROM_ROLLUPS_SQL}) AS derived`,
  )
  await client.query(
    `INSERT INTO ${TABLE.totals} (metric, item, calls, amount)
     SELECT metric, item, calls, amount FROM (${TOTALS_FROM_ROLLUPS_SQL}) AS derived`,
  )
}

/**
 * Schema migrations in order; entry i upgrades the schema to version i + 1. A store below version
 * 2 gets its rollups built from its events ({@link backfill}) after the last migration.
 */
const MIGRATIONS: readonly string[] = [
  V1_DDL,
  V2_DDL,
  ledgerDdl({ int: 'bigint', text: 'text', strict: '' }),
  V4_DDL,
]

/** Options of the PostgreSQL backend; durations in milliseconds. */
export interface PostgresStoreOptions {
  /** Bound on one insert (from the call to its commit) or ping; default {@link WRITE_TIMEOUT_MS}. */
  writeTimeoutMs?: number
  /** Bound on one read; default {@link READ_TIMEOUT_MS}. */
  readTimeoutMs?: number
  /** Insert transactions this instance runs at once (group commit merges the rest); default 1. */
  writeConcurrency?: number
  /** Raw events per backfill step when a migration builds the rollups; default 50,000. */
  backfillBatchSize?: number
}

/**
 * The PostgreSQL backend for many instances sharing one database. Uses the tables in the
 * connection's `search_path` (pass `?options=-c%20search_path%3Dmy_schema` to pick a schema).
 *
 * Every operation runs under a deadline covering connect and query; when it passes, the
 * connection is destroyed (not returned to the pool), which also ends a query stuck on a hung
 * server. A write that committed just before the deadline is harmless: inserts ignore known ids
 * and only rows actually inserted change the rollups.
 *
 * Concurrency: each insert transaction inserts the events (`ON CONFLICT DO NOTHING RETURNING id`),
 * then upserts `payers`, `usage_hourly`, `settled_hourly` and `usage_totals`, in that table order and each in key
 * order (`ORDER BY` on the upsert source), so transactions from any number of instances take their
 * row locks in one global order and cannot deadlock. A payer's crossing from 0 to 1 or 1 to 2
 * settled calls is read from its upserted row, which stays locked until commit, so exactly one
 * transaction counts it. Concurrent inserts of one instance are merged by a group-commit queue.
 *
 * @example
 * const store = createPostgresStore('postgres://app@db:5432/payload_tools')
 * await store.migrate()
 * @param connectionString - a `postgres://` or `postgresql://` URL
 */
export function createPostgresStore(
  connectionString: string,
  options: PostgresStoreOptions = {},
): TelemetryStore {
  const writeTimeoutMs = options.writeTimeoutMs ?? WRITE_TIMEOUT_MS
  const readTimeoutMs = options.readTimeoutMs ?? READ_TIMEOUT_MS
  const backfillBatchSize = options.backfillBatchSize ?? BACKFILL_BATCH_SIZE
  const pool = new pg.Pool({
    connectionString,
    max: POOL_SIZE,
    connectionTimeoutMillis: writeTimeoutMs,
    idleTimeoutMillis: 30_000,
  })
  // An idle connection dropped by the server emits here; unhandled, it would crash the process.
  pool.on('error', (error) => {
    logger.warn(
      { errCode: (error as { code?: string }).code },
      'telemetry: idle postgres connection lost',
    )
  })

  /**
   * Runs `fn` on one pooled connection under a deadline; see the factory's doc comment. `fn` may
   * call `progress()` to restart the deadline (one bound per step of a long migration).
   */
  function withClient<T>(
    timeoutMs: number,
    fn: (client: pg.PoolClient, progress: () => void) => Promise<T>,
  ): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      let client: pg.PoolClient | undefined
      let settled = false
      let released = false
      // A checked-out client emits 'error' when its socket dies; pg-pool only listens on idle
      // ones, and an unhandled 'error' would crash the process. The failure itself reaches us
      // through the pending query or the deadline.
      const onError = () => release(true)
      const release = (destroy: boolean) => {
        if (!client || released) return
        released = true
        client.release(destroy)
        client.removeListener('error', onError)
      }
      const finish = (error: unknown, value?: T) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        if (error) reject(error)
        else resolve(value as T)
      }
      const timer = setTimeout(() => {
        release(true)
        finish(new Error(`postgres did not answer within ${timeoutMs} ms`))
      }, timeoutMs)
      pool.connect().then(
        async (connected) => {
          client = connected
          connected.on('error', onError)
          if (settled) return release(true)
          try {
            const value = await fn(connected, () => timer.refresh())
            release(false)
            finish(undefined, value)
          } catch (error) {
            release(true)
            finish(error ?? new Error('postgres query failed'))
          }
        },
        (error: unknown) => finish(error ?? new Error('postgres connect failed')),
      )
    })
  }

  function migrate(): Promise<void> {
    return withClient(MIGRATE_STEP_TIMEOUT_MS, async (client, progress) => {
      await client.query('BEGIN')
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
      progress()
      await client.query(`CREATE TABLE IF NOT EXISTS ${TABLE.version} (version integer NOT NULL)`)
      const { rows } = await client.query(`SELECT MAX(version) AS v FROM ${TABLE.version}`)
      const current = Number(rows[0]?.v ?? 0)
      for (let i = current; i < MIGRATIONS.length; i++) {
        await client.query(MIGRATIONS[i] as string)
        progress()
        await client.query(`INSERT INTO ${TABLE.version} (version) VALUES ($1)`, [i + 1])
      }
      if (current < 2) await backfill(client, backfillBatchSize, progress)
      await client.query('COMMIT')
    })
  }

  /**
   * One transaction: the ledger outcomes, the events, then the rollups of those that were new, in
   * lock order. The statements are named: each connection parses and plans them once.
   */
  function insertNow(
    rows: readonly EventRow[],
    decisions: readonly LedgerDecisionWrite[],
  ): Promise<void> {
    return withClient(writeTimeoutMs, async (client) => {
      await client.query('BEGIN')
      if (decisions.length > 0) {
        const sorted = [...decisions].sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
        await client.query({
          name: 'telemetry_decide_intents_v1',
          text: `UPDATE ${LEDGER_TABLE} AS t SET outcome = d.outcome, tx = d.tx, decided_at = d.at
           FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[]) AS d(key, outcome, tx, at)
           WHERE t.payment_key = d.key AND t.outcome IS NULL`,
          values: [
            sorted.map((d) => d.key),
            sorted.map((d) => d.decision.outcome),
            sorted.map((d) => d.decision.transaction ?? null),
            sorted.map((d) => String(d.decision.at)),
          ],
        })
      }
      if (rows.length === 0) {
        await client.query('COMMIT')
        return
      }
      const { rows: fresh } = await client.query({
        name: 'telemetry_insert_events_v4',
        text: `INSERT INTO ${TABLE.events}
           (id, at, tool, transport, network, amount, outcome, scheme, payer_key)
         SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[], $4::text[], $5::text[],
                              $6::bigint[], $7::text[], $8::text[], $9::text[])
           AS e(id, at, tool, transport, network, amount, outcome, scheme, payer_key)
         ORDER BY id
         ON CONFLICT (id) DO NOTHING
         RETURNING id::text AS id`,
        values: [
          rows.map((r) => r.id),
          rows.map((r) => String(r.at)),
          rows.map((r) => r.tool),
          rows.map((r) => r.transport),
          rows.map((r) => r.network),
          rows.map((r) => r.amount),
          rows.map((r) => r.outcome),
          rows.map((r) => r.scheme ?? 'exact'),
          rows.map((r) => r.payerKey),
        ],
      })
      const freshIds = new Set(fresh.map((r) => String(r.id).toLowerCase()))
      const inserted = rows.filter((r) => freshIds.has(r.id.toLowerCase()))
      if (inserted.length > 0) {
        // Only rows new to the store change the rollups: a retried row is never counted twice.
        const delta = rollupDelta(inserted)
        const after = new Map<string, number>()
        if (delta.payers.length > 0) {
          const { rows: counts } = await client.query({
            name: 'telemetry_upsert_payers_v2',
            text: `INSERT INTO ${TABLE.payers} (payer_key, settled_calls, first_at, last_at)
             SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::bigint[])
               AS p(payer_key, settled_calls, first_at, last_at)
             ORDER BY payer_key
             ${PAYER_UPSERT}
             RETURNING payer_key, settled_calls`,
            values: [
              delta.payers.map((p) => p.payerKey),
              delta.payers.map((p) => String(p.calls)),
              delta.payers.map((p) => String(p.firstAt)),
              delta.payers.map((p) => String(p.lastAt)),
            ],
          })
          for (const r of counts) after.set(String(r.payer_key), Number(r.settled_calls))
        }
        await client.query({
          name: 'telemetry_upsert_hourly_v4',
          text: `INSERT INTO ${TABLE.hourly}
             (outcome, hour, network, tool, transport, scheme, calls, amount)
           SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[],
                                $6::text[], $7::bigint[], $8::bigint[])
             AS h(outcome, hour, network, tool, transport, scheme, calls, amount)
           ORDER BY outcome, hour, network, tool, transport, scheme
           ${HOURLY_UPSERT}`,
          values: [
            delta.hourly.map((h) => h.outcome),
            delta.hourly.map((h) => String(h.hour)),
            delta.hourly.map((h) => h.network),
            delta.hourly.map((h) => h.tool),
            delta.hourly.map((h) => h.transport),
            delta.hourly.map((h) => h.scheme),
            delta.hourly.map((h) => String(h.calls)),
            delta.hourly.map((h) => h.amount.toString()),
          ],
        })
        if (delta.settledHours.length > 0) {
          await client.query({
            name: 'telemetry_upsert_settled_hourly_v2',
            text: `INSERT INTO ${TABLE.settledHourly} (hour, calls, amount)
             SELECT * FROM unnest($1::bigint[], $2::bigint[], $3::bigint[]) AS h(hour, calls, amount)
             ORDER BY hour
             ON CONFLICT (hour) DO UPDATE SET
               calls = ${TABLE.settledHourly}.calls + excluded.calls,
               amount = ${TABLE.settledHourly}.amount + excluded.amount`,
            values: [
              delta.settledHours.map((h) => String(h.hour)),
              delta.settledHours.map((h) => String(h.calls)),
              delta.settledHours.map((h) => h.amount.toString()),
            ],
          })
        }
        const totals = mergeTotals(delta.totals, payerCounterDeltas(delta.payers, after))
        await client.query({
          name: 'telemetry_upsert_totals_v2',
          text: `INSERT INTO ${TABLE.totals} (metric, item, calls, amount)
           SELECT * FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[])
             AS t(metric, item, calls, amount)
           ORDER BY metric, item
           ON CONFLICT (metric, item) DO UPDATE SET
             calls = ${TABLE.totals}.calls + excluded.calls,
             amount = ${TABLE.totals}.amount + excluded.amount`,
          values: [
            totals.map((t) => t.metric),
            totals.map((t) => t.item),
            totals.map((t) => String(t.calls)),
            totals.map((t) => t.amount.toString()),
          ],
        })
      }
      await client.query('COMMIT')
    })
  }

  const insert = createWriteQueue(insertNow, {
    timeoutMs: writeTimeoutMs,
    maxBatchRows: INSERT_BATCH_MAX_ROWS,
    concurrency: options.writeConcurrency ?? 1,
  })

  const ledger: SettlementLedger = {
    intend(i, holdUntil) {
      return withClient(writeTimeoutMs, async (client) => {
        await client.query(
          intendSql((n) => `$${n}`),
          [
            i.key,
            i.network,
            i.amount,
            i.tool,
            i.transport,
            String(i.createdAt),
            String(i.expiresAt),
            i.question,
            String(holdUntil),
          ],
        )
      })
    },
    decide(key, d) {
      return withClient(writeTimeoutMs, async (client) => {
        const { rowCount } = await client.query(
          `UPDATE ${LEDGER_TABLE} SET outcome = $1, tx = $2, decided_at = $3
           WHERE payment_key = $4 AND outcome IS NULL`,
          [d.outcome, d.transaction ?? null, String(d.at), key],
        )
        return (rowCount ?? 0) > 0
      })
    },
    forget(key) {
      return withClient(writeTimeoutMs, async (client) => {
        await client.query(
          `DELETE FROM ${LEDGER_TABLE} WHERE payment_key = $1 AND outcome IS NULL`,
          [key],
        )
      })
    },
    claim(c) {
      // SKIP LOCKED: instances claiming at once take different rows; the outer WHERE re-checks
      // the hold under the row lock, so a row is never handed to two of them.
      return withClient(writeTimeoutMs, async (client) => {
        const { rows } = await client.query(
          `WITH picked AS (
             SELECT payment_key AS picked_key FROM ${LEDGER_TABLE}
             WHERE outcome IS NULL AND claimed_until <= $2 AND network = ANY($3::text[])
             ORDER BY created_at LIMIT $4 FOR UPDATE SKIP LOCKED)
           UPDATE ${LEDGER_TABLE} SET claimed_until = $1 FROM picked
           WHERE payment_key = picked_key AND outcome IS NULL AND claimed_until <= $2
           RETURNING ${LEDGER_COLUMNS}`,
          [String(c.now + c.holdMs), String(c.now), [...c.networks], c.limit],
        )
        return rows.map(entryOf).sort((a, b) => a.createdAt - b.createdAt)
      })
    },
    unresolved(before) {
      return withClient(readTimeoutMs, async (client) => {
        const { rows } = await client.query(
          `SELECT COUNT(*) AS n FROM ${LEDGER_TABLE} WHERE outcome IS NULL AND created_at < $1`,
          [String(before)],
        )
        return Number(rows[0]?.n ?? 0)
      })
    },
    get(key) {
      return withClient(readTimeoutMs, async (client) => {
        const { rows } = await client.query(
          `SELECT ${LEDGER_COLUMNS} FROM ${LEDGER_TABLE} WHERE payment_key = $1`,
          [key],
        )
        return rows[0] ? entryOf(rows[0]) : undefined
      })
    },
    prune(before, limit) {
      return withClient(writeTimeoutMs, async (client) => {
        const { rowCount } = await client.query(
          `DELETE FROM ${LEDGER_TABLE} WHERE payment_key IN (
             SELECT payment_key FROM ${LEDGER_TABLE}
             WHERE outcome IS NOT NULL AND decided_at < $1::bigint
             LIMIT $2::int FOR UPDATE SKIP LOCKED)`,
          [String(before), limit],
        )
        return rowCount ?? 0
      })
    },
  }

  return {
    backend: 'postgres',
    migrate,
    insert,
    ledger,
    read(windows) {
      return withClient(readTimeoutMs, async (client) => {
        // One statement, so one snapshot for every figure; named, so that each connection parses
        // and plans it once (planning cost more than running it).
        const { rows } = await client.query({
          name: 'telemetry_read_v2',
          ...toPositional(READ_SQL, readParams(windows)),
        })
        return readRollups(rows)
      })
    },
    prune(before, limit) {
      return withClient(writeTimeoutMs, async (client) => {
        // SKIP LOCKED: instances pruning at the same time take different rows, never wait.
        const { rowCount } = await client.query(
          `WITH mark AS (
             UPDATE ${TABLE.retention} SET pruned_before = GREATEST(pruned_before, $1::bigint)
             WHERE id = 1),
           doomed AS (
             SELECT id FROM ${TABLE.events} WHERE at < $1::bigint
             LIMIT $2::int FOR UPDATE SKIP LOCKED)
           DELETE FROM ${TABLE.events} WHERE id IN (SELECT id FROM doomed)`,
          [String(before), limit],
        )
        return rowCount ?? 0
      })
    },
    ping() {
      return withClient(writeTimeoutMs, async (client) => {
        await client.query('SELECT 1')
      })
    },
    async close() {
      await pool.end()
    },
  }
}
