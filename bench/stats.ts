/**
 * `npx tsx bench/stats.ts [--seconds N]`: GET /stats under load against a bare Hono route, in one
 * run. A child process serves both on @hono/node-server: the bare route (a small JSON) and the
 * real service (createService) with SQLite telemetry seeded with 10,000 payment events; this
 * process drives them with autocannon (10 connections, a warm-up, then N seconds, default 10), so
 * the load generator does not share the servers' event loop. Request logging is off in both, as
 * in `npm run bench`. Prints a Markdown table with median and p99 latency, req/s and the ratios.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { loadConfig } from '../src/config.js'
import { logger } from '../src/logger.js'
import { createService } from '../src/service.js'
import { toEventRow } from '../src/telemetry/event-row.js'
import { createTelemetry, createTelemetryStore, type Telemetry } from '../src/telemetry/index.js'
import type { EventRow } from '../src/telemetry/types.js'
import { catalog } from '../src/tools/catalog.js'
import { bareHono, listen, type Target } from './http.js'
import { table } from './measure.js'

/** Payment events in the seeded store: 5,000 paid attempts, a `verified` and an outcome each. */
const EVENTS = 10_000
const CONNECTIONS = 10
const WARM_UP_SECONDS = 3
const SALT = 'bench-stats-salt-0000'
const NETWORKS = ['eip155:8453', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp']

/** URLs the child serves. */
interface Served {
  bare: string
  /** GET /health of the same service: the app's middleware without /stats. */
  health: string
  stats: string
  /** The same service and database with the stats cache off: the cost of one aggregate query. */
  statsUncached: string
}

/** Deterministic pseudo-random numbers (mulberry32), so every run seeds the same events. */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** 10,000 events over the last 10 days: 300 payers, both rails, every tool, 95 % settled. */
function seedRows(now: number): EventRow[] {
  const next = random(402)
  const rows: EventRow[] = []
  for (let i = 0; i < EVENTS / 2; i++) {
    const tool = catalog[Math.floor(next() * catalog.length)] ?? catalog[0]
    if (!tool) throw new Error('empty catalogue')
    const base = {
      tool: tool.id,
      transport: next() < 0.8 ? ('http' as const) : ('mcp' as const),
      network: NETWORKS[next() < 0.6 ? 0 : 1] as string,
      amount: tool.price,
      payer: `0x${Math.floor(next() * 300)
        .toString(16)
        .padStart(40, '0')}`,
      at: now - Math.floor(next() * 10 * 86_400_000),
    }
    const outcome = next() < 0.95 ? ('settled' as const) : ('tool_failed_unsettled' as const)
    for (const event of [
      { ...base, outcome: 'verified' as const },
      { ...base, outcome },
    ]) {
      const result = toEventRow(event, SALT, now)
      if (!result.ok) throw new Error(`invalid seed event: ${result.field}`)
      rows.push(result.row)
    }
  }
  return rows
}

/** Child: seeds the store, starts the servers, reports their URLs, and stops on request. */
async function serveChild(): Promise<void> {
  logger.level = 'silent'
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-stats-'))
  const store = createTelemetryStore(undefined, { dataDir })
  await store.migrate()
  const rows = seedRows(Date.now())
  for (let i = 0; i < rows.length; i += 500) await store.insert(rows.slice(i, i + 500))
  await store.close()

  const telemetries: Telemetry[] = []
  const targets: Target[] = [await listen(bareHono().fetch)]
  for (const cacheMs of [undefined, 0]) {
    const telemetry = await createTelemetry({
      dataDir,
      salt: SALT,
      ...(cacheMs === 0 ? { cacheMs } : {}),
    })
    telemetries.push(telemetry)
    const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent' })
    targets.push(await listen(createService(config, { telemetry }).app.fetch))
  }
  const [bare, stats, uncached] = targets
  if (!bare || !stats || !uncached) throw new Error('servers did not start')
  const served: Served = {
    bare: `${bare.url}/bare`,
    health: `${stats.url}/health`,
    stats: `${stats.url}/stats`,
    statsUncached: `${uncached.url}/stats`,
  }
  process.send?.(served)
  process.on('message', async () => {
    for (const target of targets) await target.close()
    for (const telemetry of telemetries) await telemetry.close()
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
}

interface Measured {
  name: string
  /** Latency percentiles in whole milliseconds (autocannon's resolution). */
  p50: number
  p99: number
  rps: number
  non2xx: number
}

async function measure(name: string, url: string, seconds: number): Promise<Measured> {
  const options = { url, connections: CONNECTIONS }
  await autocannon({ ...options, duration: WARM_UP_SECONDS })
  const result = await autocannon({ ...options, duration: seconds })
  return {
    name,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: Math.round(result.requests.average),
    non2xx: result.non2xx,
  }
}

/** Mean latency in ms from the throughput: every connection has one request in flight. */
const meanMs = (r: Measured) => (CONNECTIONS / r.rps) * 1000

/** Parent: starts the child, loads each URL in turn, prints the figures. */
async function main(): Promise<void> {
  const flag = process.argv.indexOf('--seconds')
  const seconds = flag >= 0 ? Number(process.argv[flag + 1]) : 10
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: process.execArgv,
  })
  try {
    const served = await new Promise<Served>((resolve, reject) => {
      child.once('message', (message) => resolve(message as Served))
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)))
    })
    const check = await fetch(served.stats)
    if (check.status !== 200) throw new Error(`GET /stats answered ${check.status}`)
    const body = (await check.json()) as { paid_calls: number }

    const results = [
      await measure('bare Hono GET (baseline)', served.bare, seconds),
      await measure('GET /health (same app, no /stats)', served.health, seconds),
      await measure('GET /stats (2 s cache, as served)', served.stats, seconds),
      await measure('GET /stats (cache off: one query per request)', served.statsUncached, seconds),
    ]
    const base = results[0] as Measured
    const out = (text = '') => process.stdout.write(`${text}\n`)
    out(
      `# GET /stats under load (${new Date().toISOString()}, node ${process.version}, ` +
        `${EVENTS.toLocaleString('en-US')} events in SQLite, paid_calls ${body.paid_calls})\n`,
    )
    out(
      `autocannon: ${CONNECTIONS} connections, ${WARM_UP_SECONDS} s warm-up, ${seconds} s measured, ` +
        'servers in a child process.\n',
    )
    out(
      table(
        [
          'endpoint',
          'p50',
          'p99',
          'req/s',
          'mean latency',
          'req/s vs bare',
          'mean latency vs bare',
        ],
        results.map((r) => [
          r.name,
          `${r.p50} ms`,
          `${r.p99} ms`,
          r.rps,
          `${meanMs(r).toFixed(2)} ms`,
          (r.rps / base.rps).toFixed(3),
          `${(meanMs(r) / meanMs(base)).toFixed(1)}×`,
        ]),
      ),
    )
    out(
      '\np50 and p99 are autocannon percentiles (whole milliseconds). Mean latency is ' +
        "connections ÷ req/s (Little's law): autocannon's own mean truncates each sample to 1 ms.",
    )
  } finally {
    if (child.connected) child.send('stop')
  }
}

if (process.argv.includes('--serve')) await serveChild()
else await main()
