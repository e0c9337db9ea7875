import { mkdirSync } from 'node:fs'
import { dirname } from 'node:path'
import Database from 'better-sqlite3'
import {
  entryOf,
  intendSql,
  LEDGER_COLUMNS,
  LEDGER_TABLE,
  type LedgerClaim,
  type LedgerDecision,
  type LedgerEntry,
  type LedgerIntent,
  ledgerDdl,
} from './ledger.js'
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
  V1_INDEXES,
} from './schema.js'
import type { EventRow, LedgerDecisionWrite, Rollups } from './types.js'
import type { Windows } from './windows.js'

// The synchronous SQLite core. It runs only inside the store's worker thread (sqlite-worker.ts):
// better-sqlite3 blocks the thread that calls it, and the serving thread must never wait on a
// disk. Tests and `stats:check` may open files directly, never while serving.
//
// No better-sqlite3 object may become garbage while the worker lives. With better-sqlite3 12 on
// Node 24, a Statement (or Database) that V8 collects outside a JavaScript context, as an
// idle-time GC of the worker's event loop does, aborts the whole process: Node 24's ObjectWrap
// removes its environment cleanup hook in the destructor, and that CHECKs for a current
// Environment ("Assertion failed: (env) != nullptr" in RemoveEnvironmentCleanupHook;
// WiseLibs/better-sqlite3#1515, closed without a fix for 12.x). Reproduced here: 2,000 pings with
// a fresh statement each, then a few idle seconds, killed the process every time on Node 24.21
// and never on 20 or 22. better-sqlite3 13 (Node-API) fixes it but segfaults on Node 20, which
// `npm test` must still run on. So every statement is prepared once per handle and kept
// ({@link prepareOnce}), pragmas go through exec() (which makes no wrapper), and a dropped handle
// is parked in `retired` with its statements; Node's environment cleanup frees them when the
// worker exits, which is safe.

/**
 * How long one SQLite call waits for a lock held by another process, in milliseconds. Short,
 * because only this instance should write the file (WAL mode lets readers proceed meanwhile).
 */
export const SQLITE_BUSY_TIMEOUT_MS = 200

/**
 * SQLite page cache of the worker's connection, in KiB (64 MiB). The events' id index takes
 * random inserts (UUIDs); with SQLite's default 2 MiB cache, each insert into a table of a million
 * events reads index pages from disk.
 */
export const SQLITE_CACHE_KIB = 65_536

/** Schema version 1, unchanged since it shipped: the events and the indexes of the old aggregates. */
const V1_DDL = `CREATE TABLE IF NOT EXISTS ${TABLE.events} (
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
  CREATE INDEX IF NOT EXISTS payment_events_outcome_payer ON payment_events (outcome, payer_key);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_at ON payment_events (outcome, at, amount);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_network
    ON payment_events (outcome, network, amount);
  CREATE INDEX IF NOT EXISTS payment_events_outcome_tool ON payment_events (outcome, tool);`

/** Schema version 2: the rollups (see schema.ts); WITHOUT ROWID keeps each table in key order. */
const V2_DDL = `
  CREATE TABLE ${TABLE.hourly} (
    outcome TEXT NOT NULL,
    hour INTEGER NOT NULL,
    network TEXT NOT NULL,
    tool TEXT NOT NULL,
    transport TEXT NOT NULL,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (outcome, hour, network, tool, transport)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE ${TABLE.settledHourly} (
    hour INTEGER PRIMARY KEY,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE ${TABLE.totals} (
    metric TEXT NOT NULL,
    item TEXT NOT NULL,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (metric, item)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE ${TABLE.payers} (
    payer_key TEXT PRIMARY KEY,
    settled_calls INTEGER NOT NULL,
    first_at INTEGER NOT NULL,
    last_at INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE ${TABLE.retention} (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pruned_before INTEGER NOT NULL
  ) STRICT;
  INSERT INTO ${TABLE.retention} (id, pruned_before) VALUES (1, 0);
  ${V1_INDEXES.map((name) => `DROP INDEX IF EXISTS ${name};`).join('\n  ')}
  CREATE INDEX ${TABLE.events}_at ON ${TABLE.events} (at);`

/**
 * Schema version 4: the scheme that paid (see schema.ts). SQLite cannot change a primary key, so
 * `usage_hourly` is rebuilt with `scheme` in its key, every existing row `exact`.
 */
const V4_DDL = `
  ALTER TABLE ${TABLE.events}
    ADD COLUMN scheme TEXT NOT NULL DEFAULT 'exact' CHECK (${SCHEME_CHECK});
  CREATE TABLE ${TABLE.hourly}_v4 (
    outcome TEXT NOT NULL,
    hour INTEGER NOT NULL,
    network TEXT NOT NULL,
    tool TEXT NOT NULL,
    transport TEXT NOT NULL,
    scheme TEXT NOT NULL,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (outcome, hour, network, tool, transport, scheme)
  ) STRICT, WITHOUT ROWID;
  INSERT INTO ${TABLE.hourly}_v4 (outcome, hour, network, tool, transport, scheme, calls, amount)
    SELECT outcome, hour, network, tool, transport, 'exact', calls, amount FROM ${TABLE.hourly};
  DROP TABLE ${TABLE.hourly};
  ALTER TABLE ${TABLE.hourly}_v4 RENAME TO ${TABLE.hourly};
  INSERT INTO ${TABLE.totals} (metric, item, calls, amount)
    SELECT metric, item, calls, amount FROM (${SCHEME_TOTALS_FROM_ROLLUPS_SQL}) AS derived;`

const HOURLY_UPSERT = `ON CONFLICT (outcome, hour, network, tool, transport, scheme) DO UPDATE SET
    calls = ${TABLE.hourly}.calls + excluded.calls,
    amount = ${TABLE.hourly}.amount + excluded.amount`

const PAYER_UPSERT = `ON CONFLICT (payer_key) DO UPDATE SET
    settled_calls = ${TABLE.payers}.settled_calls + excluded.settled_calls,
    first_at = MIN(${TABLE.payers}.first_at, excluded.first_at),
    last_at = MAX(${TABLE.payers}.last_at, excluded.last_at)`

/**
 * Builds the rollups from the events a version-1 store holds, in batches of `batchSize` rowids
 * ({@link BACKFILL_BATCH_SIZE} by default), then the totals from the rollups. Runs once every
 * migration is applied, so it reads and writes the current columns.
 *
 * @param progress - called after each batch (the worker reports it so a long backfill is not
 *   taken for a hung one)
 */
function backfill(db: Database.Database, batchSize: number, progress: () => void): void {
  const maxRow = prepareOnce(db, `SELECT MAX(rowid) AS m FROM ${TABLE.events}`).get() as {
    m: number | null
  }
  const range = 'rowid > @lo AND rowid <= @hi'
  const hourly = prepareOnce(
    db,
    `INSERT INTO ${TABLE.hourly} (outcome, hour, network, tool, transport, scheme, calls, amount)
     ${hourlyFromEventsSql(range)} ${HOURLY_UPSERT}`,
  )
  const payers = prepareOnce(
    db,
    `INSERT INTO ${TABLE.payers} (payer_key, settled_calls, first_at, last_at)
     ${payersFromEventsSql(range)} ${PAYER_UPSERT}`,
  )
  for (let lo = 0; lo < (maxRow.m ?? 0); lo += batchSize) {
    const bounds = { lo, hi: lo + batchSize }
    hourly.run(bounds)
    payers.run(bounds)
    progress()
  }
  db.exec(
    `INSERT INTO ${TABLE.settledHourly} (hour, calls, amount)
     SELECT hour, calls, amount FROM (${SETTLED_HOURLY_FROM_ROLLUPS_SQL}) AS derived;
     INSERT INTO ${TABLE.totals} (metric, item, calls, amount)
     SELECT metric, item, calls, amount FROM (${TOTALS_FROM_ROLLUPS_SQL}) AS derived`,
  )
}

type Migration = (db: Database.Database) => void

/**
 * Schema migrations in order; entry i upgrades the schema to version i + 1. A store below version
 * 2 gets its rollups built from its events ({@link backfill}) after the last migration.
 */
const MIGRATIONS: readonly Migration[] = [
  (db) => db.exec(V1_DDL),
  (db) => db.exec(V2_DDL),
  (db) => db.exec(ledgerDdl({ int: 'INTEGER', text: 'TEXT', strict: ' STRICT' })),
  (db) => db.exec(V4_DDL),
]

/** The schema version this code writes. */
export const SQLITE_SCHEMA_VERSION = MIGRATIONS.length

/** The statements each handle prepared, by SQL: alive exactly as long as the handle is. */
const preparedBy = new WeakMap<Database.Database, Map<string, Database.Statement>>()

/**
 * `handle.prepare(sql)`, once per handle: later calls get the same Statement, so that none ever
 * becomes garbage while its handle lives (see the note at the top).
 *
 * @example prepareOnce(db, 'SELECT 1').get() // { 1: 1 }
 * @throws the SqliteError of `prepare` (syntax, missing table)
 */
export function prepareOnce(handle: Database.Database, sql: string): Database.Statement {
  let statements = preparedBy.get(handle)
  if (!statements) {
    statements = new Map()
    preparedBy.set(handle, statements)
  }
  let statement = statements.get(sql)
  if (!statement) {
    statement = handle.prepare(sql)
    statements.set(sql, statement)
  }
  return statement
}

/**
 * Dropped handles kept reachable with their statements (see the note at the top). Each drop
 * follows a non-transient error, and the telemetry retries at most once a second; past this many
 * the oldest is let go, which on Node 24 may again abort the process when V8 collects it.
 */
export const RETIRED_HANDLES_MAX = 1_000

/** Errors after which the handle is kept: the database is busy or full, not broken. */
const TRANSIENT_CODES = new Set(['SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_FULL'])

/** The outcome of one write of {@link SqliteCore.group}. */
export type GroupResult<T> = { ok: true; value: T } | { ok: false; error: unknown }

/** True when an error belongs to one write's data, not to the database or its file. */
function ownFault(error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return !(error instanceof Database.SqliteError) || String(code).startsWith('SQLITE_CONSTRAINT')
}

/** Options of {@link createSqliteCore}. */
export interface SqliteCoreOptions {
  /** Raw events per backfill step; default {@link BACKFILL_BATCH_SIZE}. */
  backfillBatchSize?: number
}

/** The store's operations on one database file, synchronous; see the note at the top. */
export interface SqliteCore {
  migrate(progress: () => void): void
  /**
   * The rows, and the ledger outcomes in `decisions` (as `ledger.decide` writes them), in one
   * transaction.
   *
   * @returns how many rows were new (the others were already stored)
   */
  insert(rows: readonly EventRow[], decisions?: readonly LedgerDecisionWrite[]): number
  read(windows: Windows): Rollups
  prune(before: number, limit: number): number
  ping(): void
  close(): void
  /**
   * Group commit: runs `writes` in order in one transaction (one fsync for all), each in a
   * savepoint of its own, so that a write refused for its own data (a constraint, a bad value)
   * fails alone and the others commit. Any other error rolls the whole group back and fails
   * every write in it, with the error.
   *
   * @returns each write's value or error, in order
   */
  group<T>(writes: readonly (() => T)[]): GroupResult<T>[]
  /** The settlement ledger's operations (ledger.ts), synchronous. */
  ledger: {
    intend(intent: LedgerIntent, holdUntil: number): void
    decide(key: string, decision: LedgerDecision): boolean
    forget(key: string): void
    claim(claim: LedgerClaim): LedgerEntry[]
    unresolved(before: number): number
    get(key: string): LedgerEntry | undefined
    prune(before: number, limit: number): number
  }
}

/**
 * Opens (lazily) the database at `path` with journal_mode=WAL and synchronous=FULL, so a
 * committed transaction survives a process crash and a power cut. After a non-transient error
 * the handle is dropped and reopened by the next call.
 *
 * @param path - database file path (its directory is created), or `:memory:`
 */
export function createSqliteCore(path: string, options: SqliteCoreOptions = {}): SqliteCore {
  const batchSize = options.backfillBatchSize ?? BACKFILL_BATCH_SIZE
  let db: Database.Database | undefined
  let statements: ReturnType<typeof prepare> | undefined
  const retired: Database.Database[] = []

  /** Keeps a closed handle reachable, with its statements, until the worker exits. */
  function retire(handle: Database.Database): void {
    retired.push(handle)
    if (retired.length > RETIRED_HANDLES_MAX) retired.shift()
  }

  function prepare(handle: Database.Database) {
    const once = (sql: string) => prepareOnce(handle, sql)
    return {
      insertEvent: once(
        `INSERT INTO ${TABLE.events}
           (id, at, tool, transport, network, amount, outcome, scheme, payer_key)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
      ),
      upsertPayer: once(
        `INSERT INTO ${TABLE.payers} (payer_key, settled_calls, first_at, last_at)
           VALUES (?, ?, ?, ?) ${PAYER_UPSERT} RETURNING settled_calls`,
      ).pluck(),
      upsertHourly: once(
        `INSERT INTO ${TABLE.hourly} (outcome, hour, network, tool, transport, scheme, calls, amount)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?) ${HOURLY_UPSERT}`,
      ),
      upsertSettledHour: once(
        `INSERT INTO ${TABLE.settledHourly} (hour, calls, amount) VALUES (?, ?, ?)
         ON CONFLICT (hour) DO UPDATE SET
           calls = ${TABLE.settledHourly}.calls + excluded.calls,
           amount = ${TABLE.settledHourly}.amount + excluded.amount`,
      ),
      upsertTotal: once(
        `INSERT INTO ${TABLE.totals} (metric, item, calls, amount) VALUES (?, ?, ?, ?)
         ON CONFLICT (metric, item) DO UPDATE SET
           calls = ${TABLE.totals}.calls + excluded.calls,
           amount = ${TABLE.totals}.amount + excluded.amount`,
      ),
      read: once(READ_SQL).safeIntegers(true),
      markPruned: once(
        `UPDATE ${TABLE.retention} SET pruned_before = MAX(pruned_before, ?) WHERE id = 1`,
      ),
      prune: once(
        `DELETE FROM ${TABLE.events} WHERE rowid IN
           (SELECT rowid FROM ${TABLE.events} WHERE at < ? LIMIT ?)`,
      ),
      intend: once(intendSql(() => '?')),
      decide: once(
        `UPDATE ${LEDGER_TABLE} SET outcome = ?, tx = ?, decided_at = ?
         WHERE payment_key = ? AND outcome IS NULL`,
      ),
      forget: once(`DELETE FROM ${LEDGER_TABLE} WHERE payment_key = ? AND outcome IS NULL`),
      // One statement: SQLite runs one writer at a time, so the claim is atomic.
      claim: once(
        `UPDATE ${LEDGER_TABLE} SET claimed_until = @until
         WHERE payment_key IN (
           SELECT payment_key FROM ${LEDGER_TABLE}
           WHERE outcome IS NULL AND claimed_until <= @now
             AND network IN (SELECT value FROM json_each(@networks))
           ORDER BY created_at LIMIT @limit)
         RETURNING ${LEDGER_COLUMNS}`,
      ),
      unresolved: once(
        `SELECT COUNT(*) AS n FROM ${LEDGER_TABLE} WHERE outcome IS NULL AND created_at < ?`,
      ).pluck(),
      getIntent: once(`SELECT ${LEDGER_COLUMNS} FROM ${LEDGER_TABLE} WHERE payment_key = ?`),
      pruneIntents: once(
        `DELETE FROM ${LEDGER_TABLE} WHERE payment_key IN (SELECT payment_key FROM ${LEDGER_TABLE}
           WHERE outcome IS NOT NULL AND decided_at < ? LIMIT ?)`,
      ),
    }
  }

  function open(): Database.Database {
    if (db) return db
    if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true })
    const handle = new Database(path, { timeout: SQLITE_BUSY_TIMEOUT_MS })
    try {
      // exec, not pragma(): pragma() prepares a statement that would become garbage.
      handle.exec(
        `PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL; PRAGMA cache_size = -${SQLITE_CACHE_KIB}`,
      )
    } catch (error) {
      handle.close()
      retire(handle)
      throw error
    }
    db = handle
    return handle
  }

  /** Prepared statements; only valid once the schema is current. */
  function ready(handle: Database.Database) {
    statements ??= prepare(handle)
    return statements
  }

  /** Inside {@link SqliteCore.group}: its own `use` decides what becomes of the handle. */
  let grouped = false

  /** Runs `fn` on the open handle; drops the handle after a non-transient error so it reopens. */
  function use<T>(fn: (handle: Database.Database) => T): T {
    if (grouped) return fn(open())
    try {
      return fn(open())
    } catch (error) {
      const code = (error as { code?: unknown }).code
      if (typeof code !== 'string' || !TRANSIENT_CODES.has(code)) {
        try {
          db?.close()
        } catch {
          // The handle is already unusable; closing it is best effort.
        }
        if (db) retire(db)
        db = undefined
        statements = undefined
      }
      throw error
    }
  }

  return {
    migrate(progress) {
      use((handle) => {
        handle.exec(`CREATE TABLE IF NOT EXISTS ${TABLE.version} (version INTEGER NOT NULL)`)
        handle
          .transaction(() => {
            const row = prepareOnce(handle, `SELECT MAX(version) AS v FROM ${TABLE.version}`).get()
            const current = Number((row as { v: number | null }).v ?? 0)
            for (let i = current; i < MIGRATIONS.length; i++) {
              ;(MIGRATIONS[i] as Migration)(handle)
              progress()
              prepareOnce(handle, `INSERT INTO ${TABLE.version} (version) VALUES (?)`).run(i + 1)
            }
            if (current < 2) backfill(handle, batchSize, progress)
          })
          .immediate()
      })
    },

    insert(rows, decisions = []) {
      return use((handle) => {
        const s = ready(handle)
        return handle
          .transaction(() => {
            for (const { key, decision: d } of decisions) {
              s.decide.run(d.outcome, d.transaction ?? null, d.at, key)
            }
            const inserted: EventRow[] = []
            for (const r of rows) {
              const { changes } = s.insertEvent.run(
                r.id,
                BigInt(r.at),
                r.tool,
                r.transport,
                r.network,
                BigInt(r.amount),
                r.outcome,
                r.scheme ?? 'exact',
                r.payerKey,
              )
              if (changes > 0) inserted.push(r)
            }
            if (inserted.length === 0) return 0
            // Only rows new to the store change the rollups: a retried row is never counted twice.
            const delta = rollupDelta(inserted)
            const after = new Map<string, number>()
            for (const p of delta.payers) {
              const calls = s.upsertPayer.get(p.payerKey, p.calls, p.firstAt, p.lastAt)
              after.set(p.payerKey, Number(calls))
            }
            for (const h of delta.hourly) {
              s.upsertHourly.run(
                h.outcome,
                h.hour,
                h.network,
                h.tool,
                h.transport,
                h.scheme,
                h.calls,
                h.amount,
              )
            }
            for (const h of delta.settledHours) s.upsertSettledHour.run(h.hour, h.calls, h.amount)
            for (const t of mergeTotals(delta.totals, payerCounterDeltas(delta.payers, after))) {
              s.upsertTotal.run(t.metric, t.item, t.calls, t.amount)
            }
            return inserted.length
          })
          .immediate()
      })
    },

    read(windows) {
      return use((handle) =>
        readRollups(ready(handle).read.all(readParams(windows)) as Record<string, unknown>[]),
      )
    },

    prune(before, limit) {
      return use((handle) => {
        const s = ready(handle)
        return handle
          .transaction(() => {
            s.markPruned.run(before)
            return s.prune.run(before, limit).changes
          })
          .immediate()
      })
    },

    ping() {
      use((handle) => prepareOnce(handle, 'SELECT 1').get())
    },

    group(writes) {
      return use((handle) => {
        grouped = true
        try {
          return handle
            .transaction(() =>
              writes.map((write) => {
                try {
                  return { ok: true as const, value: handle.transaction(write)() }
                } catch (error) {
                  if (!ownFault(error)) throw error
                  return { ok: false as const, error }
                }
              }),
            )
            .immediate()
        } finally {
          grouped = false
        }
      })
    },

    ledger: {
      intend(i, holdUntil) {
        use((handle) =>
          ready(handle).intend.run(
            i.key,
            i.network,
            BigInt(i.amount),
            i.tool,
            i.transport,
            i.createdAt,
            i.expiresAt,
            i.question,
            holdUntil,
          ),
        )
      },
      decide(key, d) {
        return use(
          (handle) =>
            ready(handle).decide.run(d.outcome, d.transaction ?? null, d.at, key).changes > 0,
        )
      },
      forget(key) {
        use((handle) => ready(handle).forget.run(key))
      },
      claim(c) {
        return use((handle) =>
          (
            ready(handle).claim.all({
              until: c.now + c.holdMs,
              now: c.now,
              networks: JSON.stringify(c.networks),
              limit: c.limit,
            }) as Record<string, unknown>[]
          )
            .map(entryOf)
            .sort((a, b) => a.createdAt - b.createdAt),
        )
      },
      unresolved(before) {
        return use((handle) => Number(ready(handle).unresolved.get(before)))
      },
      get(key) {
        return use((handle) => {
          const row = ready(handle).getIntent.get(key) as Record<string, unknown> | undefined
          return row ? entryOf(row) : undefined
        })
      },
      prune(before, limit) {
        return use((handle) => ready(handle).pruneIntents.run(before, limit).changes)
      },
    },

    close() {
      db?.close()
      if (db) retire(db)
      db = undefined
      statements = undefined
    },
  }
}
