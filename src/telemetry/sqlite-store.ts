import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import {
  type AggregateRows,
  aggregateSql,
  EVENTS_TABLE,
  INDEXES_SQL,
  readAggregates,
} from './aggregate-sql.js'
import type { Aggregates, EventRow, TelemetryStore, Windows } from './types.js'

/**
 * How long one SQLite call waits for a lock held by another process, in milliseconds. better-sqlite3
 * is synchronous, so this wait blocks the event loop; it is short because only this instance
 * should write the file (WAL mode lets readers and the one writer proceed without waiting).
 */
export const SQLITE_BUSY_TIMEOUT_MS = 200

/** Schema migrations in order; entry i upgrades the schema to version i + 1. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE IF NOT EXISTS ${EVENTS_TABLE} (
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
  ${INDEXES_SQL}`,
]

/** Errors after which the handle is kept: the database is busy or full, not broken. */
const TRANSIENT_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_FULL'])

/**
 * The embedded SQLite backend for a single instance. The file (and its directory) is created on
 * first use; journal_mode=WAL with synchronous=FULL so a resolved insert survives a process crash
 * and a power cut. The handle is opened lazily and reopened after a non-transient error.
 *
 * better-sqlite3 is synchronous: an insert costs one fsync (about 3 ms) and the aggregates block
 * the event loop for about 160 ms at 200,000 events, once per stats cache period.
 *
 * @example
 * const store = createSqliteStore('./data/telemetry.sqlite')
 * await store.migrate()
 * @param path - database file path, or `:memory:`
 */
export function createSqliteStore(path: string): TelemetryStore {
  let db: Database.Database | undefined

  function open(): Database.Database {
    if (db) return db
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    const handle = new Database(path, { timeout: SQLITE_BUSY_TIMEOUT_MS })
    try {
      handle.pragma('journal_mode = WAL')
      handle.pragma('synchronous = FULL')
    } catch (error) {
      handle.close()
      throw error
    }
    db = handle
    return handle
  }

  /** Runs `fn` on the open handle; drops the handle after a non-transient error so it reopens. */
  function use<T>(fn: (handle: Database.Database) => T): Promise<T> {
    try {
      return Promise.resolve(fn(open()))
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code !== 'string' || !TRANSIENT_CODES.has(code)) {
        try {
          db?.close()
        } catch {
          // The handle is already unusable; closing it is best effort.
        }
        db = undefined
      }
      return Promise.reject(error)
    }
  }

  function migrate(): Promise<void> {
    return use((handle) => {
      handle.exec('CREATE TABLE IF NOT EXISTS telemetry_schema_version (version INTEGER NOT NULL)')
      handle
        .transaction(() => {
          const row = handle.prepare('SELECT MAX(version) AS v FROM telemetry_schema_version').get()
          const current = Number((row as { v: number | null }).v ?? 0)
          for (let i = current; i < MIGRATIONS.length; i++) {
            handle.exec(MIGRATIONS[i] as string)
            handle.prepare('INSERT INTO telemetry_schema_version (version) VALUES (?)').run(i + 1)
          }
        })
        .immediate()
    })
  }

  function insert(rows: readonly EventRow[]): Promise<void> {
    return use((handle) => {
      const statement = handle.prepare(
        `INSERT INTO ${EVENTS_TABLE} (id, at, tool, transport, network, amount, outcome, payer_key)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      )
      handle.transaction(() => {
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
    })
  }

  function aggregate(w: Windows): Promise<Aggregates> {
    return use((handle) => {
      const params = {
        now: BigInt(w.now),
        dayAgo: BigInt(w.dayAgo),
        weekAgo: BigInt(w.weekAgo),
        dailyStart: BigInt(w.dailyStart),
      }
      // safeIntegers: sums come back as bigint, never rounded through a double. One read
      // transaction, so every figure comes from the same snapshot.
      const rows = handle.transaction(() =>
        Object.fromEntries(
          Object.entries(aggregateSql()).map(([name, text]) => [
            name,
            handle.prepare(text).safeIntegers(true).all(params) as Record<string, unknown>[],
          ]),
        ),
      )()
      return readAggregates(rows as AggregateRows)
    })
  }

  function ping(): Promise<void> {
    return use((handle) => {
      handle.prepare('SELECT 1').get()
    })
  }

  async function close(): Promise<void> {
    db?.close()
    db = undefined
  }

  return { backend: 'sqlite', migrate, insert, aggregate, ping, close }
}
