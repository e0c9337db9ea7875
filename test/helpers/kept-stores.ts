import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import pg from 'pg'
import { PG_ADMIN_URL } from './pg-schema.js'

// Stores that end-to-end tests filled with real paid calls are kept after the run for
// `npm run stats:check -- --artifacts test-artifacts/telemetry-stores` (run by .ci/run after
// `npm test`), which recomputes every /stats figure from their raw events and compares it with
// their rollups. Each test file keeps its own stores under its own names and removes what its
// previous run kept, so at most one run's stores exist and parallel test files never collide.

/** Where kept stores and their descriptions live (gitignored). */
export const KEPT_STORES_DIR = fileURLToPath(
  new URL('../../test-artifacts/telemetry-stores/', import.meta.url),
)

/** A kept store as `stats:check --artifacts` reads it. */
export type KeptStore =
  | { name: string; backend: 'sqlite'; path: string }
  | { name: string; backend: 'postgres'; url: string; schema: string }

const descriptionOf = (name: string) => join(KEPT_STORES_DIR, `${name}.json`)

/** A directory for a kept SQLite store named `name` (the telemetry `dataDir`), emptied. */
export function keptSqliteDir(name: string): string {
  const dir = join(KEPT_STORES_DIR, name)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  return dir
}

/** Removes the store a previous run kept under `name`: its SQLite files or its schema. */
export async function discardKeptStore(name: string): Promise<void> {
  const file = descriptionOf(name)
  if (!existsSync(file)) return
  const kept = JSON.parse(readFileSync(file, 'utf8')) as KeptStore
  rmSync(file, { force: true })
  if (kept.backend === 'sqlite') {
    rmSync(join(KEPT_STORES_DIR, name), { recursive: true, force: true })
    return
  }
  if (!/^\w+$/.test(kept.schema)) return
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  try {
    await admin.query(`DROP SCHEMA IF EXISTS ${kept.schema} CASCADE`)
  } finally {
    await admin.end()
  }
}

/** Records a filled store for `stats:check`. */
export function keepStore(kept: KeptStore): void {
  mkdirSync(KEPT_STORES_DIR, { recursive: true })
  writeFileSync(descriptionOf(kept.name), `${JSON.stringify(kept, null, 2)}\n`)
}
