import pg from 'pg'
import { logger } from '../logger.js'
import {
  type AggregateRows,
  aggregateSql,
  EVENTS_TABLE,
  INDEXES_SQL,
  readAggregates,
  toPositional,
} from './aggregate-sql.js'
import { MIGRATE_TIMEOUT_MS, READ_TIMEOUT_MS, WRITE_TIMEOUT_MS } from './limits.js'
import type { Aggregates, EventRow, TelemetryStore, Windows } from './types.js'

/** Connections per instance; many instances share one database, so keep it small. */
const POOL_SIZE = 4

/** `pg_advisory_xact_lock` key serialising migrations across instances starting together. */
const MIGRATION_LOCK_KEY = 7_402_001

/** Schema migrations in order; entry i upgrades the schema to version i + 1. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS ${EVENTS_TABLE} (
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
  ${INDEXES_SQL}`,
]

/** Options of the PostgreSQL backend. */
export interface PostgresStoreOptions {
  /** Bound on one insert or ping in milliseconds; default {@link WRITE_TIMEOUT_MS}. */
  writeTimeoutMs?: number
  /** Bound on one aggregate query in milliseconds; default {@link READ_TIMEOUT_MS}. */
  readTimeoutMs?: number
}

/**
 * The PostgreSQL backend for many instances sharing one database. Uses the tables in the
 * connection's `search_path` (pass `?options=-c%20search_path%3Dmy_schema` to pick a schema).
 *
 * Every operation runs under a deadline covering connect and query; when it passes, the
 * connection is destroyed (not returned to the pool), which also ends a query stuck on a hung
 * server. A write that committed just before the deadline is harmless: inserts ignore known ids.
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

  /** Runs `fn` on one pooled connection under a deadline; see the factory's doc comment. */
  function withClient<T>(timeoutMs: number, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
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
            const value = await fn(connected)
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
    return withClient(MIGRATE_TIMEOUT_MS, async (client) => {
      await client.query('BEGIN')
      await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY])
      await client.query(
        'CREATE TABLE IF NOT EXISTS telemetry_schema_version (version integer NOT NULL)',
      )
      const { rows } = await client.query('SELECT MAX(version) AS v FROM telemetry_schema_version')
      const current = Number(rows[0]?.v ?? 0)
      for (let i = current; i < MIGRATIONS.length; i++) {
        await client.query(MIGRATIONS[i] as string)
        await client.query('INSERT INTO telemetry_schema_version (version) VALUES ($1)', [i + 1])
      }
      await client.query('COMMIT')
    })
  }

  function insert(rows: readonly EventRow[]): Promise<void> {
    return withClient(writeTimeoutMs, async (client) => {
      // One statement over parallel arrays: atomic, and any batch size fits in 8 parameters.
      await client.query(
        `INSERT INTO ${EVENTS_TABLE} (id, at, tool, transport, network, amount, outcome, payer_key)
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
    })
  }

  function aggregate(w: Windows): Promise<Aggregates> {
    return withClient(readTimeoutMs, async (client) => {
      // One snapshot for every figure.
      await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
      const rows: Partial<AggregateRows> = {}
      for (const [name, text] of Object.entries(aggregateSql())) {
        const query = toPositional(text, w)
        rows[name as keyof AggregateRows] = (await client.query(query.text, query.values)).rows
      }
      await client.query('COMMIT')
      return readAggregates(rows as AggregateRows)
    })
  }

  function ping(): Promise<void> {
    return withClient(writeTimeoutMs, async (client) => {
      await client.query('SELECT 1')
    })
  }

  async function close(): Promise<void> {
    await pool.end()
  }

  return { backend: 'postgres', migrate, insert, aggregate, ping, close }
}
