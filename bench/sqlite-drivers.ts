/**
 * better-sqlite3 against Node's built-in `node:sqlite` (`DatabaseSync`, Node 22.13+ unflagged), on
 * the work the SQLite telemetry store does: each driver in its own worker thread (as
 * src/telemetry/sqlite-worker.ts runs the store), a file database in WAL mode with
 * synchronous=FULL, events inserted with `ON CONFLICT DO NOTHING` and rolled up by upserts
 * (hourly, totals, payers with RETURNING), committed one event per transaction and in groups (the
 * write queue's group commit), then aggregate reads with 64-bit integers and point reads.
 *
 * Standalone (it imports nothing of the service) so that it runs on any Node with type stripping:
 *
 *   <node 24>/bin/node bench/sqlite-drivers.ts --modules <node_modules with better-sqlite3 built for it>
 *
 * `npm run smoke:node` leaves such a node and node_modules in ~/.cache/payload-tools/node-smoke.
 * A comparison for a decision, not a CI check: it prints figures and asserts only that both
 * drivers stored the same rows.
 */
import { randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads'

type Driver = 'better-sqlite3' | 'node:sqlite'

/** One prepared statement, whichever the driver: positional parameters only. */
interface Statement {
  run(...params: unknown[]): void
  get(...params: unknown[]): Record<string, unknown> | undefined
  all(...params: unknown[]): Record<string, unknown>[]
}

/** The little of a connection the store uses. */
interface Connection {
  exec(sql: string): void
  prepare(sql: string, bigints?: boolean): Statement
  close(): void
  version: string
}

interface Job {
  driver: Driver
  modules: string
  dir: string
  perEvent: number
  grouped: number
  reads: number
  gets: number
}

export interface Figures {
  driver: Driver
  sqlite: string
  commitPerEventPerSecond: number
  group100PerSecond: number
  group500PerSecond: number
  aggregateReadMs: number
  pointGetsPerSecond: number
  rows: { events: number; hourly: number; payers: number; calls: number }
}

/**
 * Opens `path` with the job's driver. Statements are prepared once per SQL and kept for the life
 * of the worker, for both drivers alike: better-sqlite3 12 on Node 24 aborts the process when V8
 * collects a statement outside a JavaScript context (src/telemetry/sqlite-db.ts).
 */
function open(job: Job, path: string): Connection {
  const cache = new Map<string, Statement>()
  const once = (sql: string, make: () => Statement) => {
    let statement = cache.get(sql)
    if (!statement) {
      statement = make()
      cache.set(sql, statement)
    }
    return statement
  }
  if (job.driver === 'better-sqlite3') {
    const Database = createRequire(join(job.modules, 'noop.js'))('better-sqlite3') as new (
      path: string,
      options: { timeout: number },
    ) => {
      exec(sql: string): void
      prepare(sql: string): Statement & { safeIntegers(on: boolean): Statement }
      close(): void
    }
    const db = new Database(path, { timeout: 200 })
    const prepare = (sql: string, bigints?: boolean) =>
      once(sql, () => (bigints ? db.prepare(sql).safeIntegers(true) : db.prepare(sql)))
    return {
      exec: (sql) => db.exec(sql),
      prepare,
      close: () => db.close(),
      version: String(prepare('SELECT sqlite_version() AS v').get()?.v),
    }
  }
  const { DatabaseSync } = createRequire(import.meta.url)(
    'node:sqlite',
  ) as typeof import('node:sqlite')
  const db = new DatabaseSync(path, { timeout: 200 })
  const prepare = (sql: string, bigints?: boolean) =>
    once(sql, () => {
      const statement = db.prepare(sql)
      if (bigints) statement.setReadBigInts(true)
      return statement as unknown as Statement
    })
  return {
    exec: (sql) => db.exec(sql),
    prepare,
    close: () => db.close(),
    version: String(prepare('SELECT sqlite_version() AS v').get()?.v),
  }
}

const SCHEMA = `
  PRAGMA journal_mode = WAL;
  PRAGMA synchronous = FULL;
  PRAGMA cache_size = -65536;
  CREATE TABLE events (id TEXT PRIMARY KEY, at INTEGER NOT NULL, tool TEXT NOT NULL,
    transport TEXT NOT NULL, network TEXT NOT NULL, amount INTEGER NOT NULL,
    outcome TEXT NOT NULL, payer_key TEXT) STRICT;
  CREATE INDEX events_at ON events (at);
  CREATE TABLE hourly (outcome TEXT NOT NULL, hour INTEGER NOT NULL, network TEXT NOT NULL,
    tool TEXT NOT NULL, transport TEXT NOT NULL, calls INTEGER NOT NULL, amount INTEGER NOT NULL,
    PRIMARY KEY (outcome, hour, network, tool, transport)) STRICT, WITHOUT ROWID;
  CREATE TABLE totals (metric TEXT NOT NULL, item TEXT NOT NULL, calls INTEGER NOT NULL,
    amount INTEGER NOT NULL, PRIMARY KEY (metric, item)) STRICT, WITHOUT ROWID;
  CREATE TABLE payers (payer_key TEXT PRIMARY KEY, settled_calls INTEGER NOT NULL,
    first_at INTEGER NOT NULL, last_at INTEGER NOT NULL) STRICT, WITHOUT ROWID;`

const TOOLS = ['hash', 'base64', 'hmac', 'json-validate', 'jwt-inspect', 'text-diff', 'pipeline']
const NETWORKS = ['eip155:8453', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp']

/** Runs the whole measurement for one driver; in a worker thread. */
function measure(job: Job): Figures {
  const path = join(job.dir, `${job.driver.replace(':', '-')}.sqlite`)
  const db = open(job, path)
  db.exec(SCHEMA)
  const insertEvent = db.prepare(
    `INSERT INTO events (id, at, tool, transport, network, amount, outcome, payer_key)
     VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
  )
  const upsertHourly = db.prepare(
    `INSERT INTO hourly VALUES (?, ?, ?, ?, ?, 1, ?) ON CONFLICT (outcome, hour, network, tool, transport)
     DO UPDATE SET calls = hourly.calls + 1, amount = hourly.amount + excluded.amount`,
  )
  const upsertTotal = db.prepare(
    `INSERT INTO totals VALUES (?, ?, 1, ?) ON CONFLICT (metric, item)
     DO UPDATE SET calls = totals.calls + 1, amount = totals.amount + excluded.amount`,
  )
  const upsertPayer = db.prepare(
    `INSERT INTO payers VALUES (?, 1, ?, ?) ON CONFLICT (payer_key) DO UPDATE SET
     settled_calls = payers.settled_calls + 1, first_at = MIN(payers.first_at, excluded.first_at),
     last_at = MAX(payers.last_at, excluded.last_at) RETURNING settled_calls`,
  )
  let n = 0
  const start = Date.UTC(2026, 0, 1)
  function insertOne(): void {
    n++
    const at = start + n * 1_000
    const tool = TOOLS[n % TOOLS.length] as string
    const network = NETWORKS[n % NETWORKS.length] as string
    const payer = `payer-${n % 500}`
    // Time-ordered ids, as the store's UUIDv7: inserts land at the end of the primary key.
    insertEvent.run(
      `${at.toString(16).padStart(12, '0')}-${randomUUID()}`,
      at,
      tool,
      'http',
      network,
      1000,
      'settled',
      payer,
    )
    upsertHourly.run('settled', Math.floor(at / 3_600_000), network, tool, 'http', 1000)
    upsertTotal.run('settled_tool', tool, 1000)
    upsertTotal.run('settled_network', network, 1000)
    const row = upsertPayer.get(payer, at, at)
    if (row?.settled_calls === undefined) throw new Error('RETURNING gave no row')
  }
  function transaction(size: number): void {
    db.exec('BEGIN IMMEDIATE')
    try {
      for (let i = 0; i < size; i++) insertOne()
      db.exec('COMMIT')
    } catch (error) {
      db.exec('ROLLBACK')
      throw error
    }
  }
  function rate(count: number, size: number): number {
    const t0 = performance.now()
    for (let done = 0; done < count; done += size) transaction(size)
    return Math.round(count / ((performance.now() - t0) / 1000))
  }

  const commitPerEventPerSecond = rate(job.perEvent, 1)
  const group100PerSecond = rate(job.grouped, 100)
  const group500PerSecond = rate(job.grouped, 500)

  const aggregate = db.prepare(
    `SELECT network, tool, SUM(calls) AS calls, SUM(amount) AS amount FROM hourly
     WHERE outcome = 'settled' AND hour >= ? GROUP BY network, tool ORDER BY network, tool`,
    true,
  )
  let t0 = performance.now()
  for (let i = 0; i < job.reads; i++) aggregate.all(0n)
  const aggregateReadMs = (performance.now() - t0) / job.reads

  const byId = db.prepare('SELECT payer_key, settled_calls FROM payers WHERE payer_key = ?')
  t0 = performance.now()
  for (let i = 0; i < job.gets; i++) byId.get(`payer-${i % 500}`)
  const pointGetsPerSecond = Math.round(job.gets / ((performance.now() - t0) / 1000))

  const count = (sql: string) => Number(db.prepare(sql).get()?.n)
  const figures: Figures = {
    driver: job.driver,
    sqlite: db.version,
    commitPerEventPerSecond,
    group100PerSecond,
    group500PerSecond,
    aggregateReadMs: Math.round(aggregateReadMs * 1000) / 1000,
    pointGetsPerSecond,
    rows: {
      events: count('SELECT COUNT(*) AS n FROM events'),
      hourly: count('SELECT COUNT(*) AS n FROM hourly'),
      payers: count('SELECT COUNT(*) AS n FROM payers'),
      calls: count('SELECT SUM(settled_calls) AS n FROM payers'),
    },
  }
  db.close()
  return figures
}

function inWorker(job: Job): Promise<Figures> {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL(import.meta.url), { workerData: job })
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`${job.driver} worker exited with ${code}`))
    })
  })
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      modules: { type: 'string', default: join(process.cwd(), 'node_modules') },
      rounds: { type: 'string', default: '2' },
    },
  })
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-drivers-'))
  const base = {
    modules: values.modules,
    perEvent: 2_000,
    grouped: 50_000,
    reads: 2_000,
    gets: 100_000,
  }
  const results: Figures[] = []
  try {
    // Alternate the drivers so that a busy spell of the machine does not fall on one alone.
    for (let round = 0; round < Number(values.rounds); round++) {
      for (const driver of ['better-sqlite3', 'node:sqlite'] as const) {
        const roundDir = mkdtempSync(join(dir, `${round}-`))
        results.push(await inWorker({ ...base, driver, dir: roundDir }))
      }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  const [first] = results
  for (const r of results) {
    if (JSON.stringify(r.rows) !== JSON.stringify(first?.rows)) {
      throw new Error(
        `the drivers stored different rows: ${JSON.stringify(results.map((x) => x.rows))}`,
      )
    }
  }
  process.stdout.write(
    `Node ${process.version}, ${results.length / 2} rounds (best of each shown)\n`,
  )
  const best = (driver: Driver, key: keyof Figures, lower = false) => {
    const values = results.filter((r) => r.driver === driver).map((r) => r[key] as number)
    return lower ? Math.min(...values) : Math.max(...values)
  }
  const rows: [string, keyof Figures, boolean][] = [
    ['commit per event (events/s)', 'commitPerEventPerSecond', false],
    ['group commit of 100 (events/s)', 'group100PerSecond', false],
    ['group commit of 500 (events/s)', 'group500PerSecond', false],
    ['aggregate read, BigInt (ms)', 'aggregateReadMs', true],
    ['point get (gets/s)', 'pointGetsPerSecond', false],
  ]
  const better = results.find((r) => r.driver === 'better-sqlite3')
  const builtin = results.find((r) => r.driver === 'node:sqlite')
  process.stdout.write(
    `| | better-sqlite3 (SQLite ${better?.sqlite}) | node:sqlite (SQLite ${builtin?.sqlite}) |\n| --- | ---: | ---: |\n`,
  )
  for (const [label, key, lower] of rows) {
    process.stdout.write(
      `| ${label} | ${best('better-sqlite3', key, lower)} | ${best('node:sqlite', key, lower)} |\n`,
    )
  }
  process.stdout.write(`rows per run: ${JSON.stringify(first?.rows)}\n`)
}

if (isMainThread) {
  main().catch((error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  })
} else {
  parentPort?.postMessage(measure(workerData as Job))
}
