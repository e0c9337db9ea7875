/**
 * `npm run stats:check`: recomputes every GET /stats figure from the raw payment events and
 * compares it with the rollups the service reads, then compares the rollup tables row by row
 * (src/telemetry/reconcile.ts). Prints every comparison; exits 1 on any difference, 2 when there
 * is nothing to check or a store cannot be read.
 *
 * @example
 * DATABASE_URL=postgres://app@db/payload_tools npm run stats:check   # the operator's store
 * npm run stats:check                         # ./data/telemetry.sqlite (DATABASE_URL unset)
 * npm run stats:check -- --artifacts test-artifacts/telemetry-stores --require sqlite,postgres  # CI
 *
 * In `--artifacts` mode every `*.json` file in the directory names one store:
 * `{ "name": "…", "backend": "sqlite", "path": "…" }` or `{ "name": "…", "backend": "postgres",
 * "url": "postgres://…" }` (written by the end-to-end tests, see test/helpers/kept-stores.ts).
 * `--require sqlite,postgres` also fails (exit 2) when no store of one of those backends is found.
 * `--drop-checked` removes the kept stores (SQLite files, PostgreSQL schemas, descriptions) once
 * every check passed, so CI runs on a persistent database leave nothing behind; a store that
 * differs is kept for inspection.
 */
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { reconcile } from '../src/telemetry/reconcile.js'
import { openSnapshot } from '../src/telemetry/snapshot.js'
import { type StoreLocation, storeLocation } from '../src/telemetry/store.js'

const out = (line = '') => process.stdout.write(`${line}\n`)

/** A store to check and how to name it in the output (never with a password). */
interface Target {
  name: string
  location: StoreLocation
  /** `--artifacts` mode: the description file, and the schema of a kept PostgreSQL store. */
  kept?: { file: string; schema?: string }
}

/** The location without credentials: host, database and the schema in `search_path`. */
function describe(location: StoreLocation): string {
  if (location.backend === 'sqlite') return `sqlite ${location.path}`
  const url = new URL(location.url)
  const options = url.searchParams.get('options') ?? ''
  const schema = /search_path=([\w,]+)/.exec(options)?.[1]
  return `postgres ${url.host}${url.pathname}${schema ? ` (schema ${schema})` : ''}`
}

function fromArtifacts(dir: string): Target[] {
  if (!existsSync(dir)) return []
  return readdirSync(dir)
    .filter((file) => file.endsWith('.json'))
    .sort()
    .map((file) => {
      const kept = JSON.parse(readFileSync(join(dir, file), 'utf8')) as {
        name?: string
        backend: string
        path?: string
        url?: string
        schema?: string
      }
      const location: StoreLocation =
        kept.backend === 'postgres'
          ? { backend: 'postgres', url: String(kept.url) }
          : { backend: 'sqlite', path: String(kept.path) }
      return {
        name: kept.name ?? file,
        location,
        kept: { file: join(dir, file), ...(kept.schema ? { schema: kept.schema } : {}) },
      }
    })
}

function fromEnvironment(): Target[] {
  const location = storeLocation(process.env.DATABASE_URL || undefined)
  if (location.backend === 'sqlite' && !existsSync(location.path)) return []
  return [{ name: 'DATABASE_URL', location }]
}

async function check(target: Target): Promise<'ok' | 'differs' | 'failed'> {
  out(`stats:check ${target.name}: ${describe(target.location)}`)
  let reader: Awaited<ReturnType<typeof openSnapshot>> | undefined
  try {
    reader = await openSnapshot(target.location)
    const result = await reconcile(reader)
    out(
      `  schema v${result.schemaVersion}; figures at ${new Date(result.now).toISOString()}; ` +
        (result.prunedBefore === 0
          ? 'raw events never pruned'
          : `raw events pruned before ${new Date(result.prunedBefore).toISOString()}`),
    )
    let differs = false
    for (const c of result.comparisons) {
      const ok = c.differences.length === 0
      differs ||= !ok
      out(
        `  ${ok ? 'ok  ' : 'DIFF'} ${c.name}: ${c.compared} compared, ${c.differences.length} differences`,
      )
      for (const line of c.differences) out(`       ${line}`)
    }
    return differs ? 'differs' : 'ok'
  } catch (error) {
    out(`  FAILED: ${error instanceof Error ? error.message : String(error)}`)
    return 'failed'
  } finally {
    await reader?.close().catch(() => {})
  }
}

/** Removes a kept store and its description (`--drop-checked`). */
async function drop(target: Target): Promise<void> {
  if (!target.kept) return
  if (target.location.backend === 'sqlite') {
    for (const suffix of ['', '-wal', '-shm'])
      rmSync(`${target.location.path}${suffix}`, { force: true })
  } else if (target.kept.schema && /^\w+$/.test(target.kept.schema)) {
    const client = new pg.Client({ connectionString: target.location.url })
    await client.connect()
    try {
      await client.query(`DROP SCHEMA IF EXISTS ${target.kept.schema} CASCADE`)
    } finally {
      await client.end()
    }
  }
  rmSync(target.kept.file, { force: true })
  out(`stats:check: removed ${target.name}`)
}

async function main(): Promise<number> {
  const { values } = parseArgs({
    options: {
      artifacts: { type: 'string' },
      require: { type: 'string' },
      'drop-checked': { type: 'boolean', default: false },
    },
  })
  const targets = values.artifacts ? fromArtifacts(values.artifacts) : fromEnvironment()
  const missing = (values.require ?? '')
    .split(',')
    .filter(Boolean)
    .filter((backend) => !targets.some((t) => t.location.backend === backend))
  if (missing.length > 0) {
    out(`stats:check: no ${missing.join(' or ')} store to check`)
    return 2
  }
  if (targets.length === 0) {
    out(
      values.artifacts
        ? `stats:check: no store to check in ${values.artifacts} (run the end-to-end tests first)`
        : 'stats:check: no store to check (set DATABASE_URL, or run the service once to create ./data/telemetry.sqlite)',
    )
    return 2
  }
  const results: string[] = []
  for (const target of targets) results.push(await check(target))
  const bad = results.filter((r) => r !== 'ok').length
  out(`stats:check: ${targets.length} store(s) checked, ${bad} with differences or errors`)
  if (results.includes('failed')) return 2
  if (bad > 0) return 1
  if (values['drop-checked']) for (const target of targets) await drop(target)
  return 0
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(
      `stats:check failed: ${error instanceof Error ? error.stack : String(error)}\n`,
    )
    process.exit(2)
  },
)
