import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createPostgresStore, type PostgresStoreOptions } from './postgres-store.js'
import { createSqliteStore } from './sqlite-store.js'
import type { TelemetryStore } from './types.js'

/** File name of the default SQLite database inside the data directory. */
export const DEFAULT_SQLITE_FILE = 'telemetry.sqlite'

/** Options of {@link createTelemetryStore}. */
export interface TelemetryStoreOptions extends PostgresStoreOptions {
  /** Directory for the default SQLite file; default `./data`. */
  dataDir?: string
}

/**
 * Picks the telemetry backend from `DATABASE_URL`:
 * - unset or empty: SQLite at `<dataDir>/telemetry.sqlite`;
 * - `postgres://…` or `postgresql://…`: PostgreSQL (many instances sharing one database);
 * - `file:` URL, `:memory:` or any other string without a URL scheme: SQLite at that path.
 *
 * Nothing is opened until the first operation; call `migrate()` first.
 *
 * @example
 * createTelemetryStore(process.env.DATABASE_URL, { dataDir: './data' }).backend // 'sqlite'
 * @throws {Error} for a URL with any other scheme (the message names the scheme, never the URL,
 *   which may hold a password)
 */
export function createTelemetryStore(
  databaseUrl: string | undefined,
  options: TelemetryStoreOptions = {},
): TelemetryStore {
  const dataDir = options.dataDir ?? './data'
  if (!databaseUrl) return createSqliteStore(join(dataDir, DEFAULT_SQLITE_FILE))
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(databaseUrl)?.[1]?.toLowerCase()
  if (scheme === 'postgres' || scheme === 'postgresql') {
    return createPostgresStore(databaseUrl, options)
  }
  if (databaseUrl.startsWith('file:')) return createSqliteStore(fileURLToPath(databaseUrl))
  if (scheme)
    throw new Error(`DATABASE_URL: unsupported scheme "${scheme}"; use postgres:// or a file path`)
  return createSqliteStore(
    databaseUrl === ':memory:' || isAbsolute(databaseUrl) ? databaseUrl : resolve(databaseUrl),
  )
}
