/**
 * What the operator metrics and the request ids cost (issue 20): the unpaid 402 of `POST /hash`,
 * the hot path, with the metrics off (no METRICS_TOKEN or METRICS_PORT: nothing recorded) and on
 * (every request timed into its histogram), against a bare Hono route answering the identical
 * 402, with and without the request-id middleware (hono's `request-id` plus AsyncLocalStorage);
 * then a paid call on the devnet with the metrics off and on.
 *
 * The 402 servers run in a child process, so that autocannon does not share their event loop;
 * endpoints are loaded in turn, round after round, and each figure is the median of the rounds,
 * with the server's CPU time per request beside it. The paid calls alternate between a service
 * with and one without metrics, sequentially, one payer per service.
 *
 * `npx tsx bench/metrics.ts [--rounds N] [--seconds S] [--calls N]` runs this section alone.
 */

import { type ChildProcess, fork } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { x402HTTPClient } from '@x402/core/client'
import autocannon from 'autocannon'
import { Hono } from 'hono'
import { loadConfig } from '../src/config.js'
import { payerClient } from '../src/devnet/payer.js'
import { startDevStack } from '../src/devnet/stack.js'
import { createApp } from '../src/http/app.js'
import { createRateLimit } from '../src/http/rate-limit.js'
import { requestIds } from '../src/http/request-id.js'
import { logger } from '../src/logger.js'
import { createMetrics, metricsEndpoint } from '../src/metrics/index.js'
import { createService } from '../src/service.js'
import { catalog } from '../src/tools/catalog.js'
import { fakeGate } from '../test/helpers/fakes.js'
import { listen, type Target } from './http.js'
import { median, table } from './measure.js'
import { type BenchMode, pick } from './mode.js'

const CONNECTIONS = 10
const WARM_UP_SECONDS = 2
const BODY = JSON.stringify({ input: 'abc' })
const CEILING = 'bare Hono, identical 402'
const CEILING_IDS = 'bare Hono, identical 402 + request ids'
const OFF = 'ours, metrics off'
const ON = 'ours, metrics on'
const TOKEN = 'bench-metrics-token-0123456789abcdef'
/** Response headers the server writes per connection or per request, not the handler. */
const NOT_REPLAYED = new Set(['date', 'connection', 'keep-alive', 'content-length', 'x-request-id'])

interface Endpoint {
  name: string
  url: string
}

/**
 * Child: serves the four endpoints on loopback ports, reports them, then answers `cpu` (its CPU
 * time so far) and `stop`.
 */
async function serveChild(): Promise<void> {
  logger.level = 'silent'
  const targets: Target[] = []
  const ours = async (metrics: boolean) => {
    const registry = metrics
      ? createMetrics({ tools: catalog.map((t) => t.id), networks: ['eip155:8453'] })
      : undefined
    const app = createApp({
      gate: fakeGate().gate,
      tools: catalog,
      publicBaseUrl: 'http://127.0.0.1',
      // As deployed: the limiter on (in memory here), with a quota the bench never reaches.
      rateLimit: createRateLimit({
        points: 1_000_000_000,
        durationSeconds: 60,
        trustProxyHops: 0,
        ...(registry ? { onRefused: registry.rateLimited } : {}),
      }),
      ...(registry
        ? {
            metrics: {
              observe: registry.http,
              endpoint: metricsEndpoint(registry, { token: TOKEN }),
            },
          }
        : {}),
    })
    const target = await listen(app.fetch)
    targets.push(target)
    return target.url
  }
  const off = await ours(false)
  const on = await ours(true)
  // The 402 as the service sends it, captured once: the bare routes replay these bytes.
  const res = await fetch(`${off}/hash`, {
    method: 'POST',
    body: BODY,
    headers: { 'content-type': 'application/json' },
  })
  const body = new Uint8Array(await res.arrayBuffer())
  const headers = Object.fromEntries(
    [...res.headers.entries()].filter(([name]) => !NOT_REPLAYED.has(name)),
  )
  const bare = (ids: boolean) => {
    const app = new Hono()
    if (ids) app.use(requestIds())
    app.post('/hash', (c) => c.body(body.slice(), 402, headers))
    return app
  }
  const ceiling = await listen(bare(false).fetch)
  const ceilingIds = await listen(bare(true).fetch)
  targets.push(ceiling, ceilingIds)
  const endpoints: Endpoint[] = [
    { name: CEILING, url: `${ceiling.url}/hash` },
    { name: CEILING_IDS, url: `${ceilingIds.url}/hash` },
    { name: OFF, url: `${off}/hash` },
    { name: ON, url: `${on}/hash` },
  ]
  process.send?.(endpoints)
  process.on('message', async (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage()
      process.send?.({ cpuMicros: user + system })
      return
    }
    for (const target of targets) await target.close()
    process.exit(0)
  })
}

function ask<T>(child: ChildProcess, message: string): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (answer) => resolve(answer as T))
    child.send(message)
  })
}

interface Sample {
  rps: number
  cpuPerRequest: number
}

async function load(endpoint: Endpoint, seconds: number): Promise<autocannon.Result> {
  const result = await autocannon({
    url: endpoint.url,
    connections: CONNECTIONS,
    method: 'POST',
    duration: seconds,
    body: BODY,
    headers: { 'content-type': 'application/json' },
  })
  const answered = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx']
  if (result.errors > 0 || result['4xx'] !== answered) {
    throw new Error(`${endpoint.name}: not every answer was a 402`)
  }
  return result
}

/** The 402 path: a Markdown table of medians, and the ratio metrics on / off. */
async function bench402(rounds: number, seconds: number): Promise<string> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: process.execArgv,
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  try {
    const endpoints = await new Promise<Endpoint[]>((resolve, reject) => {
      child.once('message', (message) => resolve(message as Endpoint[]))
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)))
    })
    for (const endpoint of endpoints) await load(endpoint, WARM_UP_SECONDS)
    const samples = new Map<string, Sample[]>(endpoints.map((e) => [e.name, []]))
    for (let round = 0; round < rounds; round++) {
      for (const endpoint of endpoints) {
        const before = (await ask<{ cpuMicros: number }>(child, 'cpu')).cpuMicros
        const result = await load(endpoint, seconds)
        const cpu = (await ask<{ cpuMicros: number }>(child, 'cpu')).cpuMicros - before
        samples
          .get(endpoint.name)
          ?.push({ rps: result.requests.average, cpuPerRequest: cpu / result.requests.total })
      }
    }
    const rps = (name: string) => median((samples.get(name) ?? []).map((s) => s.rps))
    const cpu = (name: string) => median((samples.get(name) ?? []).map((s) => s.cpuPerRequest))
    const rows = endpoints.map(({ name }) => {
      const spread = (samples.get(name) ?? []).map((s) => s.rps)
      return [
        name,
        Math.round(rps(name)),
        `${Math.round(Math.min(...spread))}–${Math.round(Math.max(...spread))}`,
        `${cpu(name).toFixed(0)} µs`,
        (rps(name) / rps(CEILING)).toFixed(2),
      ]
    })
    // Paired per round (the same load conditions): the metrics' cost on the 402 path.
    const onOff = (samples.get(ON) ?? []).map((s, i) => s.rps / (samples.get(OFF)?.[i]?.rps ?? 1))
    const idsCost = (samples.get(CEILING_IDS) ?? []).map(
      (s, i) => s.rps / (samples.get(CEILING)?.[i]?.rps ?? 1),
    )
    return [
      `autocannon: ${CONNECTIONS} connections, \`POST /hash\` with \`${BODY}\` (unpaid), ` +
        `${WARM_UP_SECONDS} s warm-up, then ${rounds} rounds of ${seconds} s per endpoint, ` +
        'interleaved; medians of the rounds. Servers in a child process, request log off, the ' +
        'limiter in memory with a quota never reached.',
      '',
      table(
        ['endpoint', 'req/s (median)', 'rounds (min–max)', 'server CPU / req', 'vs identical 402'],
        rows,
      ),
      '',
      `Metrics on / off, req/s, median of the per-round ratios: **${median(onOff).toFixed(3)}** ` +
        `(rounds ${onOff.map((r) => r.toFixed(2)).join(', ')}); server CPU per request ` +
        `${cpu(ON).toFixed(0)} µs on, ${cpu(OFF).toFixed(0)} µs off. Target (issue 20): at least ` +
        `0.95. Request ids on a bare route: ${median(idsCost).toFixed(3)} of the same route ` +
        `without them (${(cpu(CEILING_IDS) - cpu(CEILING)).toFixed(0)} µs of CPU per request).`,
    ].join('\n')
  } finally {
    if (child.connected) child.send('stop')
  }
}

/**
 * The same 402 in this process (`app.fetch`, no sockets): the CPU time per request with the
 * metrics off and on, without the load generator's share of the machine in the way.
 */
async function bench402InProcess(rounds: number): Promise<string> {
  const requests = 4_000
  const app = (metrics: boolean) =>
    createApp({
      gate: fakeGate().gate,
      tools: catalog,
      publicBaseUrl: 'http://127.0.0.1',
      ...(metrics
        ? {
            metrics: {
              observe: createMetrics({ tools: catalog.map((t) => t.id), networks: [] }).http,
            },
          }
        : {}),
    })
  const apps = [
    { name: 'metrics off', app: app(false), cpu: [] as number[] },
    { name: 'metrics on', app: app(true), cpu: [] as number[] },
  ]
  const request = () =>
    new Request('http://127.0.0.1/hash', {
      method: 'POST',
      body: BODY,
      headers: { 'content-type': 'application/json', 'content-length': String(BODY.length) },
    })
  for (let round = 0; round <= rounds; round++) {
    for (const entry of apps) {
      const before = process.cpuUsage()
      for (let i = 0; i < requests; i++) await (await entry.app.fetch(request())).arrayBuffer()
      const { user, system } = process.cpuUsage(before)
      // Round 0 warms up.
      if (round > 0) entry.cpu.push((user + system) / requests)
    }
  }
  const [off, on] = apps.map((a) => median(a.cpu)) as [number, number]
  return (
    `In process (\`app.fetch\`, ${requests} requests per round, ${rounds} rounds, median CPU per ` +
    `request): ${off.toFixed(1)} µs off, ${on.toFixed(1)} µs on: the metrics add ` +
    `${(on - off).toFixed(1)} µs, ${(((on - off) / off) * 100).toFixed(1)} % of the 402's own work.`
  )
}

/** A paid call on the devnet, metrics off and on, alternating; medians of the paid request. */
async function benchPaidCalls(calls: number): Promise<string> {
  const stack = await startDevStack({ payers: 2 })
  const off = createService(loadConfig({ ...stack.serviceEnv, LOG_LEVEL: 'silent' }))
  const on = createService(
    loadConfig({ ...stack.serviceEnv, LOG_LEVEL: 'silent', METRICS_TOKEN: TOKEN }),
  )
  const services = [
    { name: 'metrics off', service: off, payer: 0, times: [] as number[] },
    { name: 'metrics on', service: on, payer: 1, times: [] as number[] },
  ]
  const targets = await Promise.all(services.map((s) => listen(s.service.app.fetch)))
  try {
    await Promise.all(services.map((s) => s.service.runner.warm()))
    for (let i = 0; i < calls + 2; i++) {
      for (const [k, s] of services.entries()) {
        const url = `${targets[k]?.url}/hash`
        const http = new x402HTTPClient(
          await payerClient(
            { evmPrivateKey: stack.evm.payers[s.payer]?.privateKey as `0x${string}` },
            'evm',
          ),
        )
        const init = {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify({ input: `bench ${s.name} ${i}` }),
        }
        const unpaid = await fetch(url, init)
        await unpaid.text()
        const payload = await http.createPaymentPayload(
          http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)),
        )
        const headers = { ...init.headers, ...http.encodePaymentSignatureHeader(payload) }
        const started = performance.now()
        const paid = await fetch(url, { ...init, headers })
        await paid.text()
        const ms = performance.now() - started
        if (paid.status !== 200) throw new Error(`paid call answered ${paid.status}`)
        if (i >= 2) s.times.push(ms)
      }
    }
  } finally {
    await Promise.all(targets.map((t) => t.close()))
    await Promise.all(services.map((s) => s.service.close()))
    await stack.stop()
  }
  const [offTimes, onTimes] = services.map((s) => s.times) as [number[], number[]]
  return [
    `${calls} paid \`POST /hash\` calls per service on Base (anvil), alternating, after 2 warm-up ` +
      'calls; the paid request alone (verify, run, settle, 200), median and spread.',
    '',
    table(
      ['service', 'paid request (median)', 'min–max'],
      services.map((s) => [
        s.name,
        `${median(s.times).toFixed(1)} ms`,
        `${Math.min(...s.times).toFixed(1)}–${Math.max(...s.times).toFixed(1)} ms`,
      ]),
    ),
    '',
    `Metrics on / off: ${(median(onTimes) / median(offTimes)).toFixed(3)} of the paid request's ` +
      'median time (the recording itself is a few microseconds; the spread is the devnet).',
  ].join('\n')
}

/**
 * The section: the 402 path, then paid calls; `quick` and `smoke` for shorter runs.
 *
 * @param counts - rounds and seconds of the 402 path, paid calls per service (the command line's)
 */
export async function benchMetrics(
  mode: BenchMode,
  counts = {
    rounds: pick(mode, { full: 7, quick: 2, smoke: 1 }),
    seconds: pick(mode, { full: 3, quick: 2, smoke: 1 }),
    calls: pick(mode, { full: 20, quick: 5, smoke: 2 }),
  },
): Promise<string> {
  return [
    '### The 402 path',
    '',
    await bench402(counts.rounds, counts.seconds),
    '',
    await bench402InProcess(counts.rounds),
    '',
    '### A paid call',
    '',
    await benchPaidCalls(counts.calls),
  ].join('\n')
}

if (process.argv.includes('--serve')) {
  await serveChild()
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (flag: string, fallback: number) => {
    const at = process.argv.indexOf(flag)
    return at >= 0 ? Number(process.argv[at + 1]) : fallback
  }
  logger.level = 'silent'
  const counts = {
    rounds: arg('--rounds', 7),
    seconds: arg('--seconds', 3),
    calls: arg('--calls', 20),
  }
  process.stdout.write(`${await benchMetrics('full', counts)}\n`)
  process.exit(0)
}
