import Database from 'better-sqlite3'
import pg from 'pg'
import { toPositional } from './schema.js'
import { prepareOnce } from './sqlite-db.js'
import type { StoreLocation } from './store.js'

/**
 * Read-only queries against one consistent snapshot of a store, for `stats:check` and tests. Not
 * for the serving path: the SQLite reader runs synchronously on the calling thread.
 */
export interface SnapshotReader {
  readonly backend: 'sqlite' | 'postgres'
  /**
   * Runs one statement inside the snapshot. Parameters are written `@name` and are integers.
   * Integers come back as bigint (SQLite) or strings (pg int8 and numeric); read them with
   * `toBigInt` or `toCount`.
   */
  all(sql: string, params?: Record<string, number>): Promise<Record<string, unknown>[]>
  /** Ends the snapshot and closes the connection. */
  close(): Promise<void>
}

/** Every SQLite snapshot this process opened (a CLI or a test opens a handful). */
const snapshotHandles: Database.Database[] = []

/**
 * Opens a read-only snapshot of the store at `location`: a read transaction on SQLite (WAL lets
 * the service keep writing meanwhile), `REPEATABLE READ READ ONLY` on PostgreSQL.
 *
 * @example
 * const reader = await openSnapshot({ backend: 'sqlite', path: './data/telemetry.sqlite' })
 * await reader.all('SELECT COUNT(*) AS n FROM payment_events') // [{ n: 12n }]
 * @throws {Error} when the SQLite file does not exist or the database cannot be reached
 */
export async function openSnapshot(location: StoreLocation): Promise<SnapshotReader> {
  if (location.backend === 'sqlite') {
    const db = new Database(location.path, { readonly: true, fileMustExist: true })
    // Kept reachable with its statements until the process exits: better-sqlite3 12 on Node 24
    // aborts when V8 collects one outside a JavaScript context (see sqlite-db.ts).
    snapshotHandles.push(db)
    db.exec('BEGIN')
    return {
      backend: 'sqlite',
      async all(sql, params) {
        const statement = prepareOnce(db, sql).safeIntegers(true)
        const rows =
          params && Object.keys(params).length > 0 ? statement.all(params) : statement.all()
        return rows as Record<string, unknown>[]
      },
      async close() {
        db.exec('COMMIT')
        db.close()
      },
    }
  }
  const client = new pg.Client({ connectionString: location.url })
  client.on('error', () => {})
  await client.connect()
  try {
    await client.query('BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY')
  } catch (error) {
    await client.end()
    throw error
  }
  return {
    backend: 'postgres',
    async all(sql, params = {}) {
      return (await client.query(toPositional(sql, params))).rows
    },
    async close() {
      try {
        await client.query('COMMIT')
      } finally {
        await client.end()
      }
    },
  }
}
