import { isAbsolute, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { createPostgresStore, type PostgresStoreOptions } from './postgres-store.js'
import { createSqliteStore, type SqliteStoreOptions } from './sqlite-store.js'
import type { TelemetryStore } from './types.js'

/** File name of the default SQLite database inside the data directory. */
export const DEFAULT_SQLITE_FILE = 'telemetry.sqlite'

/** Options of {@link createTelemetryStore}. */
export interface TelemetryStoreOptions extends PostgresStoreOptions, SqliteStoreOptions {
  /** Directory for the default SQLite file; default `./data`. */
  dataDir?: string
}

/** Where a store lives: a SQLite file (or `:memory:`) or a PostgreSQL URL. */
export type StoreLocation =
  | { backend: 'sqlite'; path: string }
  | { backend: 'postgres'; url: string }

/**
 * Reads `DATABASE_URL` as {@link createTelemetryStore} does, without opening anything.
 *
 * @example
 * storeLocation(undefined, './data') // { backend: 'sqlite', path: 'data/telemetry.sqlite' }
 * @throws {Error} for a URL with an unsupported scheme (the message names the scheme only)
 */
export function storeLocation(databaseUrl: string | undefined, dataDir = './data'): StoreLocation {
  if (!databaseUrl) return { backend: 'sqlite', path: join(dataDir, DEFAULT_SQLITE_FILE) }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(databaseUrl)?.[1]?.toLowerCase()
  if (scheme === 'postgres' || scheme === 'postgresql') {
    return { backend: 'postgres', url: databaseUrl }
  }
  if (databaseUrl.startsWith('file:'))
    return { backend: 'sqlite', path: fileURLToPath(databaseUrl) }
  if (scheme)
    throw new Error(`DATABASE_URL: unsupported scheme "${scheme}"; use postgres:// or a file path`)
  return {
    backend: 'sqlite',
    path:
      databaseUrl === ':memory:' || isAbsolute(databaseUrl) ? databaseUrl : resolve(databaseUrl),
  }
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
  const location = storeLocation(databaseUrl, options.dataDir)
  return location.backend === 'postgres'
    ? createPostgresStore(location.url, options)
    : createSqliteStore(location.path, options)
}
