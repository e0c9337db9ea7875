/**
 * The servers of the load section of `npm run bench`, in a child process so that autocannon (in
 * the parent) does not share their event loop: a bare Hono route (the baseline), the real service
 * with SQLite telemetry seeded with 10,000 payment events (GET /health, GET /stats with its 2 s
 * cache and with the cache off), the unpaid 402 path over a scripted facilitator, and the
 * fail-closed 503 path with no facilitator. Request logging is off everywhere.
 *
 * `npx tsx bench/load.ts [--seconds N]` runs the load section alone.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { loadConfig } from '../src/config.js'
import { createApp } from '../src/http/app.js'
import { logger } from '../src/logger.js'
import { createService } from '../src/service.js'
import { toEventRow } from '../src/telemetry/event-row.js'
import { createTelemetry, createTelemetryStore, type Telemetry } from '../src/telemetry/index.js'
import type { EventRow } from '../src/telemetry/types.js'
import { catalog } from '../src/tools/catalog.js'
import { fakeGate } from '../test/helpers/fakes.js'
import { bareHono, listen, type Target } from './http.js'
import { table } from './measure.js'

/** Payment events in the seeded store: 5,000 paid attempts, a `verified` and an outcome each. */
const EVENTS = 10_000
const CONNECTIONS = 10
const WARM_UP_SECONDS = 3
const SALT = 'bench-stats-salt-0000'
const NETWORKS = ['eip155:8453', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp']

/** One endpoint the child serves, as autocannon should load it. */
interface Endpoint {
  name: string
  url: string
  method?: 'GET' | 'POST'
  body?: string
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
  const bare = await listen(bareHono().fetch)
  const targets: Target[] = [bare]
  // The load generator is one client: the configuration's largest quota (1,000,000 a minute, about
  // 16,000 req/s), which no endpoint here reaches (bench/ratelimit.ts measures the limiter).
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent', RATE_LIMIT_POINTS: '1000000' })
  const withTelemetry = async (cacheMs?: number) => {
    const telemetry = await createTelemetry({
      dataDir,
      salt: SALT,
      ...(cacheMs === 0 ? { cacheMs } : {}),
    })
    telemetries.push(telemetry)
    const target = await listen(createService(config, { telemetry }).app.fetch)
    targets.push(target)
    return target.url
  }
  const served = await withTelemetry()
  const uncached = await withTelemetry(0)
  // The 402 path needs a facilitator's /supported once; a scripted one keeps the network out.
  const paid = await listen(
    createApp({ gate: fakeGate().gate, tools: catalog, publicBaseUrl: 'http://127.0.0.1' }).fetch,
  )
  targets.push(paid)
  const body = JSON.stringify({ input: 'abc' })
  const endpoints: Endpoint[] = [
    { name: 'bare Hono GET (baseline)', url: `${bare.url}/bare` },
    { name: 'bare Hono POST, JSON body read', url: `${bare.url}/bare`, method: 'POST', body },
    { name: 'GET /health', url: `${served}/health` },
    { name: 'GET /stats (2 s cache, as served)', url: `${served}/stats` },
    { name: 'GET /stats (cache off: one query per request)', url: `${uncached}/stats` },
    { name: 'POST /hash unpaid -> 402', url: `${paid.url}/hash`, method: 'POST', body },
    { name: 'POST /hash, no facilitator -> 503', url: `${served}/hash`, method: 'POST', body },
  ]
  process.send?.(endpoints)
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
}

async function measure(
  endpoint: Endpoint,
  seconds: number,
  warmUpSeconds: number,
): Promise<Measured> {
  const options = {
    url: endpoint.url,
    connections: CONNECTIONS,
    method: endpoint.method ?? 'GET',
    ...(endpoint.body
      ? { body: endpoint.body, headers: { 'content-type': 'application/json' } }
      : {}),
  }
  if (warmUpSeconds > 0) await autocannon({ ...options, duration: warmUpSeconds })
  const result = await autocannon({ ...options, duration: seconds })
  return {
    name: endpoint.name,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: Math.round(result.requests.average),
  }
}

/** Mean latency in ms from the throughput: every connection has one request in flight. */
const meanMs = (r: Measured) => (CONNECTIONS / r.rps) * 1000

/**
 * The load section: forks the servers, loads each endpoint in turn with autocannon, and returns
 * a Markdown table with ratios to the bare Hono GET measured in the same run.
 *
 * @param seconds - measured seconds per endpoint
 * @param warmUpSeconds - unmeasured load before each endpoint's measurement (0: none)
 */
export async function benchLoad(seconds: number, warmUpSeconds = WARM_UP_SECONDS): Promise<string> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: process.execArgv,
  })
  try {
    const endpoints = await new Promise<Endpoint[]>((resolve, reject) => {
      child.once('message', (message) => resolve(message as Endpoint[]))
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)))
    })
    const results: Measured[] = []
    for (const endpoint of endpoints) results.push(await measure(endpoint, seconds, warmUpSeconds))
    const base = results[0] as Measured
    return [
      `autocannon: ${CONNECTIONS} connections, ${warmUpSeconds} s warm-up, ${seconds} s measured per ` +
        `endpoint; servers in a child process; SQLite telemetry holding ${EVENTS.toLocaleString('en-US')} events.`,
      '',
      table(
        [
          'endpoint',
          'p50',
          'p99',
          'req/s',
          'mean latency',
          'req/s vs bare GET',
          'mean latency vs bare GET',
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
      '',
      "p50 and p99 are autocannon percentiles (whole milliseconds). Mean latency is connections ÷ req/s (Little's law).",
    ].join('\n')
  } finally {
    if (child.connected) child.send('stop')
  }
}

if (process.argv.includes('--serve')) {
  await serveChild()
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const flag = process.argv.indexOf('--seconds')
  process.stdout.write(`${await benchLoad(flag >= 0 ? Number(process.argv[flag + 1]) : 10)}\n`)
  process.exit(0)
}
