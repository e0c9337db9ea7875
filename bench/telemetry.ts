/**
 * `npm run bench:telemetry -- --events N [--backend sqlite|postgres] [--json] [--baseline]
 *   [--seconds S] [--migration]`
 *
 * Seeds N synthetic payment events (30 days of history, oldest first, both rails, every tool,
 * N/20 payers) through the store's public write path (`TelemetryStore.insert`, batches of 5,000
 * rows) in a child process, so that the heap it leaves behind is not collected during the
 * measurements, then measures through the telemetry facade:
 * - uncached GET /stats figures (`Telemetry.stats()` with the cache off), median of 20 (and the
 *   fastest of them, the cost when the machine did not preempt the process);
 * - the event loop's largest delay (`perf_hooks.monitorEventLoopDelay`, 1 ms resolution) during
 *   10 s (`--seconds`) of paid-event writes (`Telemetry.record`, settled events, 64 writers in a closed loop:
 *   the highest rate the store sustains) with a /stats cache miss every 2 s;
 * - the insert throughput of that phase, events per second, and how busy the event loop was
 *   (`performance.eventLoopUtilization`);
 * - as the baseline of the delay, the largest delay an idle Node.js process on the same machine
 *   sees during the same 10 s (this machine is shared: scheduling alone costs tens of ms).
 * `--baseline` also times the version-1 /stats (its aggregate queries over the raw events, with
 * its indexes) on the same events, median of 5: the figure before rollups.
 *
 * `--migration` instead builds a version-1 store (its frozen DDL) holding N events and times its
 * upgrade to version 2, the backfill of the rollups included.
 *
 * Prints a Markdown table; with `--json` the last line is one JSON object:
 * `{"events":N,"backend":"…","stats_ms_median":…,"loop_max_delay_ms":…,"inserts_per_s":…}`.
 * A temporary SQLite file or a fresh PostgreSQL schema (in `BENCH_DATABASE_URL`, default the test
 * database at 127.0.0.1:5432) is used and removed afterwards.
 */
import { execFile, fork } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay, performance as perf } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import pg from 'pg'
import { logger } from '../src/logger.js'
import { openSnapshot } from '../src/telemetry/snapshot.js'
import { createTelemetryStore, type StoreLocation, storeLocation } from '../src/telemetry/store.js'
import { createTelemetry } from '../src/telemetry/telemetry.js'
import type { PaymentEvent, TelemetryStore } from '../src/telemetry/types.js'
import { syntheticAttempts, syntheticPayerKey } from '../test/helpers/telemetry-events.js'
import {
  V1_INDEXES_SQL,
  V1_POSTGRES_DDL,
  V1_SQLITE_DDL,
  v1Figures,
} from '../test/helpers/telemetry-v1.js'
import { median, table } from './measure.js'

const SEED_BATCH_ROWS = 5_000
const HISTORY_HOURS = 30 * 24
const STATS_ROUNDS = 20
const BASELINE_ROUNDS = 5
const WRITERS = 64
const WRITE_SECONDS = 10
const STATS_EVERY_MS = 2_000

/** One bench store: where it is and how to remove it. */
interface BenchStore {
  url: string
  location: StoreLocation
  cleanup(): Promise<void>
}

async function sqliteStore(): Promise<BenchStore> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-telemetry-'))
  const path = join(dir, 'telemetry.sqlite')
  return {
    url: path,
    location: { backend: 'sqlite', path },
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  }
}

async function postgresStore(): Promise<BenchStore> {
  const admin = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test'
  const schema = `bench_telemetry_${randomBytes(6).toString('hex')}`
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin })
    await client.connect()
    try {
      await client.query(sql)
    } finally {
      await client.end()
    }
  }
  await run(`CREATE SCHEMA ${schema}`)
  const url = new URL(admin)
  url.searchParams.set('options', `-c search_path=${schema}`)
  return {
    url: url.href,
    location: { backend: 'postgres', url: url.href },
    cleanup: () => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`),
  }
}

/**
 * Starts an idle Node.js process that measures its own event-loop delay for `seconds`, like the
 * write phase does: what the machine alone costs a loop in that time.
 *
 * @returns its largest delay in milliseconds, once it finishes
 */
function idleLoopDelay(seconds: number): Promise<number> {
  const code = `const h = require('node:perf_hooks').monitorEventLoopDelay({ resolution: 1 })
    h.enable()
    setTimeout(() => { h.disable(); process.stdout.write(String(h.max / 1e6)) }, ${seconds * 1000})`
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', code], (error, stdout) => {
      if (error) reject(error)
      else resolve(Number(stdout))
    })
  })
}

/** Seeds `events` rows through `store.insert`; returns the seconds it took. */
async function seed(store: TelemetryStore, events: number, now: number): Promise<number> {
  const payerKeys = Array.from({ length: Math.max(10, Math.floor(events / 20)) }, (_, i) =>
    syntheticPayerKey(i),
  )
  const batches = Math.ceil(events / SEED_BATCH_ROWS)
  const started = performance.now()
  // Oldest first, as a service writes them: each batch covers the next slice of the history.
  for (let done = 0, batch = 0; done < events; batch++) {
    const attempts = Math.min(SEED_BATCH_ROWS, events - done) / 2
    const maxHoursAgo = Math.ceil(HISTORY_HOURS * (1 - batch / batches))
    const rows = syntheticAttempts({
      attempts: Math.ceil(attempts),
      now,
      maxHoursAgo,
      minHoursAgo: Math.max(1, Math.floor(HISTORY_HOURS * (1 - (batch + 1) / batches))),
      payers: payerKeys.length,
      payerKeys,
      seed: batch + 1,
    }).slice(0, events - done)
    await store.insert(rows)
    done += rows.length
  }
  return (performance.now() - started) / 1000
}

/** Builds a version-1 store of `events` events at `location`, then times its migration. */
async function migration(location: StoreLocation, url: string, events: number, now: number) {
  const payerKeys = Array.from({ length: Math.max(10, Math.floor(events / 20)) }, (_, i) =>
    syntheticPayerKey(i),
  )
  const batches = function* () {
    for (let done = 0, batch = 0; done < events; batch++) {
      const rows = syntheticAttempts({
        attempts: Math.ceil(Math.min(SEED_BATCH_ROWS, events - done) / 2),
        now,
        maxHoursAgo: HISTORY_HOURS,
        payers: payerKeys.length,
        payerKeys,
        seed: batch + 1,
      }).slice(0, events - done)
      done += rows.length
      yield rows
    }
  }
  const version1 = 'CREATE TABLE telemetry_schema_version (version integer NOT NULL)'
  if (location.backend === 'sqlite') {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(location.path)
    db.pragma('journal_mode = WAL')
    db.exec(`${version1}; INSERT INTO telemetry_schema_version VALUES (1); ${V1_SQLITE_DDL}`)
    const insert = db.prepare('INSERT INTO payment_events VALUES (?, ?, ?, ?, ?, ?, ?, ?)')
    for (const rows of batches()) {
      db.transaction(() => {
        for (const r of rows) {
          insert.run(
            r.id,
            r.at,
            r.tool,
            r.transport,
            r.network,
            BigInt(r.amount),
            r.outcome,
            r.payerKey,
          )
        }
      })()
    }
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  } else {
    const client = new pg.Client({ connectionString: location.url })
    await client.connect()
    await client.query(`${version1}; INSERT INTO telemetry_schema_version VALUES (1)`)
    await client.query(V1_POSTGRES_DDL)
    for (const rows of batches()) {
      await client.query(
        `INSERT INTO payment_events SELECT * FROM unnest($1::uuid[], $2::bigint[], $3::text[],
           $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[])`,
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
    }
    await client.query('VACUUM ANALYZE payment_events')
    await client.end()
  }
  const store = createTelemetryStore(url)
  const t0 = performance.now()
  await store.migrate()
  const seconds = (performance.now() - t0) / 1000
  await store.close()
  return seconds
}

/** Version-1 /stats on the same events: its indexes, then its aggregates, median of 5. */
async function baseline(location: StoreLocation, now: number): Promise<number> {
  if (location.backend === 'sqlite') {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(location.path)
    db.exec(V1_INDEXES_SQL)
    db.close()
  } else {
    const client = new pg.Client({ connectionString: location.url })
    await client.connect()
    await client.query(V1_INDEXES_SQL)
    await client.query('ANALYZE payment_events')
    await client.end()
  }
  const times: number[] = []
  for (let i = 0; i < BASELINE_ROUNDS + 1; i++) {
    const reader = await openSnapshot(location)
    const t0 = performance.now()
    await v1Figures(reader, now)
    if (i > 0) times.push(performance.now() - t0)
    await reader.close()
  }
  return median(times)
}

/**
 * Child mode: seeds the store at `url`, then settles it as time would (PostgreSQL: `VACUUM
 * ANALYZE`, which autovacuum would otherwise run during the measurements after a million
 * inserts in a minute; SQLite: a WAL checkpoint), and sends the seeding seconds to the parent.
 */
async function seedOnly(url: string, events: number, now: number): Promise<void> {
  logger.level = 'silent'
  const store = createTelemetryStore(url)
  let seconds: number
  try {
    await store.migrate()
    seconds = await seed(store, events, now)
  } finally {
    await store.close()
  }
  const location = storeLocation(url)
  if (location.backend === 'postgres') {
    const client = new pg.Client({ connectionString: location.url })
    await client.connect()
    await client.query(
      'VACUUM ANALYZE payment_events, usage_hourly, settled_hourly, usage_totals, payers',
    )
    await client.end()
  } else {
    const { default: Database } = await import('better-sqlite3')
    const db = new Database(location.path)
    db.pragma('wal_checkpoint(TRUNCATE)')
    db.close()
  }
  process.send?.({ seconds })
}

/** Runs {@link seedOnly} in a child process; returns its seeding time in seconds. */
function seedInChild(url: string, events: number, now: number): Promise<number> {
  const child = fork(
    fileURLToPath(import.meta.url),
    ['--seed-only', url, '--events', String(events), '--now', String(now)],
    { execArgv: process.execArgv },
  )
  return new Promise((resolve, reject) => {
    let seconds: number | undefined
    child.on('message', (m) => {
      seconds = (m as { seconds: number }).seconds
    })
    child.on('error', reject)
    child.on('exit', (code) =>
      seconds === undefined
        ? reject(new Error(`seeding process exited with ${code}`))
        : resolve(seconds),
    )
  })
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      'seed-only': { type: 'string' },
      now: { type: 'string' },
      events: { type: 'string', default: '10000' },
      backend: { type: 'string', default: 'sqlite' },
      json: { type: 'boolean', default: false },
      baseline: { type: 'boolean', default: false },
      seconds: { type: 'string', default: String(WRITE_SECONDS) },
      migration: { type: 'boolean', default: false },
    },
  })
  const events = Number(values.events)
  const backend = values.backend
  const seconds = Number(values.seconds)
  if (!Number.isSafeInteger(events) || events < 2)
    throw new Error('--events must be an integer ≥ 2')
  if (backend !== 'sqlite' && backend !== 'postgres') {
    throw new Error('--backend must be sqlite or postgres')
  }
  if (values['seed-only']) return seedOnly(values['seed-only'], events, Number(values.now))
  logger.level = 'silent'
  const say = (line: string) => {
    if (!values.json) process.stderr.write(`${line}\n`)
  }
  const now = Math.floor(Date.now() / 3_600_000) * 3_600_000 + 1_800_000
  const bench = backend === 'sqlite' ? await sqliteStore() : await postgresStore()
  try {
    if (values.migration) {
      say(`building a version-1 store of ${events} events (${backend}), then upgrading it…`)
      const seconds = await migration(bench.location, bench.url, events, now)
      process.stdout.write(
        `${table(
          ['events', 'backend', 'upgrade to version 2 (rollups backfilled)'],
          [[events.toLocaleString('en-US'), backend, `${seconds.toFixed(1)} s`]],
        )}\n`,
      )
      if (values.json) {
        process.stdout.write(
          `${JSON.stringify({ events, backend, migration_s: Number(seconds.toFixed(3)) })}\n`,
        )
      }
      return
    }
    say(`seeding ${events} events (${backend})…`)
    const seedSeconds = await seedInChild(bench.url, events, now)
    say(`seeded in ${seedSeconds.toFixed(1)} s`)
    const store = createTelemetryStore(bench.url)

    const telemetry = await createTelemetry({
      store,
      salt: 'bench-telemetry-salt',
      cacheMs: 0,
      dataDir: tmpdir(),
    })
    // Uncached /stats: one store read and the shaping, as a cache miss costs.
    for (let i = 0; i < 3; i++) await telemetry.stats()
    const statsTimes: number[] = []
    for (let i = 0; i < STATS_ROUNDS; i++) {
      const t0 = performance.now()
      await telemetry.stats()
      statsTimes.push(performance.now() - t0)
    }
    const statsMedian = median(statsTimes)
    // The fastest round shows the cost when the machine did not preempt us.
    const statsMin = Math.min(...statsTimes)
    say(`uncached /stats: median ${statsMedian.toFixed(2)} ms, min ${statsMin.toFixed(2)} ms`)

    // Steady paid-event writes: a verified + settled pair per call, as the gate records them.
    const histogram = monitorEventLoopDelay({ resolution: 1 })
    let written = 0
    let statsMisses = 0
    const deadline = performance.now() + seconds * 1000
    const writer = async (w: number) => {
      for (let n = 0; performance.now() < deadline; n++) {
        const event: PaymentEvent = {
          tool: 'hash',
          transport: 'http',
          network: 'eip155:8453',
          amount: '1000',
          outcome: 'settled',
          payer: `0x${(w * 1_000_003 + (n % 97)).toString(16).padStart(40, '0')}`,
        }
        await telemetry.record(event)
        written++
      }
    }
    const statsLoop = setInterval(() => {
      statsMisses++
      void telemetry.stats().catch(() => {})
    }, STATS_EVERY_MS)
    const idle = idleLoopDelay(seconds)
    histogram.enable()
    const elu0 = perf.eventLoopUtilization()
    const t0 = performance.now()
    await Promise.all(Array.from({ length: WRITERS }, (_, w) => writer(w)))
    const elapsed = (performance.now() - t0) / 1000
    const utilization = perf.eventLoopUtilization(elu0).utilization
    histogram.disable()
    clearInterval(statsLoop)
    const loopMax = histogram.max / 1e6
    const idleMax = await idle
    const insertsPerSecond = written / elapsed
    const health = telemetry.health()
    say(
      `writes: ${written} events in ${elapsed.toFixed(1)} s, loop max delay ${loopMax.toFixed(1)} ms ` +
        `(idle process meanwhile: ${idleMax.toFixed(1)} ms), loop busy ${(utilization * 100).toFixed(0)} %, ` +
        `${statsMisses} /stats misses, health ${health.status} (buffered ${health.buffered}, dropped ${health.dropped})`,
    )
    await telemetry.close()

    const v1 = values.baseline ? await baseline(bench.location, now) : undefined
    if (v1 !== undefined) say(`version-1 /stats: median ${v1.toFixed(1)} ms`)

    process.stdout.write(
      `${table(
        [
          'events',
          'backend',
          'seeding',
          'uncached /stats, median of 20 (min)',
          ...(v1 === undefined ? [] : ['v1 /stats over raw events (median of 5)']),
          `loop max delay (${seconds} s of writes)`,
          'idle process, same time',
          'loop busy',
          'inserts/s',
        ],
        [
          [
            events.toLocaleString('en-US'),
            backend,
            `${seedSeconds.toFixed(1)} s`,
            `${statsMedian.toFixed(2)} ms (${statsMin.toFixed(2)})`,
            ...(v1 === undefined ? [] : [`${v1.toFixed(1)} ms`]),
            `${loopMax.toFixed(1)} ms`,
            `${idleMax.toFixed(1)} ms`,
            `${(utilization * 100).toFixed(0)} %`,
            Math.round(insertsPerSecond).toLocaleString('en-US'),
          ],
        ],
      )}\n`,
    )
    if (values.json) {
      process.stdout.write(
        `${JSON.stringify({
          events,
          backend,
          stats_ms_median: Number(statsMedian.toFixed(3)),
          loop_max_delay_ms: Number(loopMax.toFixed(3)),
          inserts_per_s: Math.round(insertsPerSecond),
        })}\n`,
      )
    }
  } finally {
    await bench.cleanup()
  }
}

main().then(
  () => process.exit(0),
  (error: unknown) => {
    process.stderr.write(`bench failed: ${error instanceof Error ? error.stack : String(error)}\n`)
    process.exit(1)
  },
)
