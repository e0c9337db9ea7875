/**
 * The rate limiter and the 402 path (issue 11, "Performance"): the unpaid 402 of `POST /hash` as
 * the service answers it, against its true ceiling, a bare Hono route answering the identical 402
 * (same status, same headers, same body bytes, captured once from the service), and against the
 * bare hello route of the load section. Variants show where the time goes: the limiter off, in
 * memory and on Redis; the request log on (pino JSON lines written to /dev/null) and off; the
 * 402's headers and body without the 3.4 KB `PAYMENT-REQUIRED`.
 *
 * Servers run in a child process, so that autocannon does not share their event loop; its request
 * log is switched on (into /dev/null) for the endpoints named so, and off for the others. Endpoints are loaded in turn, round after round,
 * and each figure is the median over the rounds.
 *
 * `npx tsx bench/ratelimit.ts [--rounds N] [--seconds S]` runs this section alone.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import autocannon from 'autocannon'
import { Hono } from 'hono'
import { SYSTEM_REDIS_URL } from '../src/devnet/redis.js'
import { createApp } from '../src/http/app.js'
import { createRateLimit, type RateLimit } from '../src/http/rate-limit.js'
import { logger } from '../src/logger.js'
import { createRedis } from '../src/redis.js'
import { catalog } from '../src/tools/catalog.js'
import { fakeGate } from '../test/helpers/fakes.js'
import { bareHono, listen, type Target } from './http.js'
import { median, table } from './measure.js'

const CONNECTIONS = 10
const WARM_UP_SECONDS = 2
/** High enough that no request of the bench is refused: every answer is the 402. */
const POINTS = 1_000_000_000
const BODY = JSON.stringify({ input: 'abc' })
const HELLO = 'bare Hono GET hello'
const CEILING = 'bare Hono, identical 402 (the ceiling)'
const MEMORY = 'ours, limiter in memory'
const REDIS = 'ours, limiter on Redis'
/** As `npm start` runs behind nginx: the limiter on Redis and LOG_LEVEL=info. */
const DEPLOYED = 'ours, limiter on Redis, request log on (as deployed)'

/** One endpoint a child serves, as autocannon should load it. */
interface Endpoint {
  name: string
  url: string
  method: 'GET' | 'POST'
  /** Its status: every answer is checked. */
  status: 200 | 402
  /** Whether it answers the identical 402 of the service (a ratio to the ceiling is shown). */
  identical: boolean
  /** Whether the request log is on (LOG_LEVEL=info, into /dev/null) while it is loaded. */
  log: boolean
}

/** Response headers that the server writes per connection, not the handler. */
const PER_CONNECTION = new Set(['date', 'connection', 'keep-alive', 'content-length'])

/** A bare Hono app answering `POST /hash` with exactly `status`, `headers` and `body`. */
function bare402(status: number, headers: [string, string][], body: Uint8Array): Hono {
  const app = new Hono()
  const fixed = Object.fromEntries(headers)
  app.post('/hash', (c) => c.body(body.slice(), status as 402, fixed))
  return app
}

/**
 * Child: starts the servers, reports their endpoints, then answers the parent's messages: `cpu`
 * (its CPU time so far), `{ log }` (request log on or off for what follows), and `stop`.
 */
async function serveChild(): Promise<void> {
  logger.level = 'silent'
  const targets: Target[] = []
  const closers: (() => Promise<void>)[] = []
  const ours = async (rateLimit?: RateLimit) => {
    const app = createApp({
      gate: fakeGate().gate,
      tools: catalog,
      publicBaseUrl: 'http://127.0.0.1',
      ...(rateLimit ? { rateLimit } : {}),
    })
    const target = await listen(app.fetch)
    targets.push(target)
    return target.url
  }
  const memory = createRateLimit({ points: POINTS, durationSeconds: 60, trustProxyHops: 0 })
  const endpoints: Endpoint[] = []
  const post = (name: string, url: string, identical = true, log = false): Endpoint => ({
    name,
    url: `${url}/hash`,
    method: 'POST',
    status: 402,
    identical,
    log,
  })
  /** A limiter on the system Redis with a key prefix of its own; undefined without Redis. */
  const onRedis = async (): Promise<RateLimit | undefined> => {
    const redis = createRedis({ url: SYSTEM_REDIS_URL, timeoutMs: 500 })
    closers.push(() => redis.close())
    // No offline queue: wait (at most a second) for the connection before the first command.
    const ready = await new Promise<boolean>((resolve) => {
      redis.client.once('ready', () => resolve(true))
      setTimeout(() => resolve(redis.state().status === 'ready'), 1_000).unref()
    })
    if (!ready) return undefined
    const keyPrefix = `bench:${randomUUID()}`
    return createRateLimit({
      points: POINTS,
      durationSeconds: 60,
      trustProxyHops: 0,
      redis,
      keyPrefix,
    })
  }
  {
    const withMemory = await ours(memory)
    // The 402 as the service sends it, captured once: the bare route replays these bytes.
    const res = await fetch(`${withMemory}/hash`, {
      method: 'POST',
      body: BODY,
      headers: { 'content-type': 'application/json' },
    })
    const body = new Uint8Array(await res.arrayBuffer())
    const headers = [...res.headers.entries()].filter(([name]) => !PER_CONNECTION.has(name))
    const small = headers.filter(([name]) => name !== 'payment-required')
    const hello = await listen(bareHono().fetch)
    const identical = await listen(bare402(res.status, headers, body).fetch)
    const without = await listen(bare402(res.status, small, body).fetch)
    targets.push(hello, identical, without)
    endpoints.push(
      {
        name: HELLO,
        url: `${hello.url}/bare`,
        method: 'GET',
        status: 200,
        identical: false,
        log: false,
      },
      post(CEILING, identical.url),
      post('bare Hono, the 402 without PAYMENT-REQUIRED', without.url, false),
      post('ours, limiter off', await ours()),
      post(MEMORY, withMemory),
      post('ours, limiter in memory, request log on', withMemory, true, true),
    )
    const redis = await onRedis()
    if (redis) {
      const url = await ours(redis)
      endpoints.push(post(REDIS, url), post(DEPLOYED, url, true, true))
    }
  }
  process.send?.(endpoints)
  process.on('message', async (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage()
      process.send?.({ cpuMicros: user + system })
      return
    }
    if (typeof message === 'object' && message !== null && 'log' in message) {
      logger.level = message.log ? 'info' : 'silent'
      process.send?.({ log: logger.level })
      return
    }
    for (const target of targets) await target.close()
    for (const close of closers) await close()
    process.exit(0)
  })
}

/** Sends `message` to the server process and resolves with its answer. */
function ask<T>(child: ChildProcess, message: unknown): Promise<T> {
  return new Promise((resolve) => {
    child.once('message', (answer) => resolve(answer as T))
    child.send(message as string)
  })
}

/** The CPU time the server process has used so far (user + system), in microseconds. */
const cpuOf = async (child: ChildProcess) =>
  (await ask<{ cpuMicros: number }>(child, 'cpu')).cpuMicros

/** One measurement: requests per second, and the server's CPU time per request in µs. */
interface Sample {
  rps: number
  cpuPerRequest: number
}

async function sample(child: ChildProcess, endpoint: Endpoint, seconds: number): Promise<Sample> {
  await ask(child, { log: endpoint.log })
  const before = await cpuOf(child)
  const result = await load(endpoint, seconds)
  const cpu = (await cpuOf(child)) - before
  return { rps: result.requests.average, cpuPerRequest: cpu / result.requests.total }
}

/** Loads one endpoint for `seconds`, checking that every answer is as expected. */
async function load(endpoint: Endpoint, seconds: number): Promise<autocannon.Result> {
  const result = await autocannon({
    url: endpoint.url,
    connections: CONNECTIONS,
    method: endpoint.method,
    duration: seconds,
    ...(endpoint.method === 'POST'
      ? { body: BODY, headers: { 'content-type': 'application/json' } }
      : {}),
  })
  const answered = result['1xx'] + result['2xx'] + result['3xx'] + result['4xx'] + result['5xx']
  const expected = endpoint.status === 200 ? result['2xx'] : result['4xx']
  if (result.errors > 0 || expected !== answered) {
    throw new Error(`${endpoint.name}: not every answer was a ${endpoint.status}`)
  }
  return result
}

/**
 * The section: forks the server process, warms every endpoint up for `warmUpSeconds` (0: none),
 * then loads each in turn for `seconds`, `rounds` times; a Markdown table of medians with the
 * ratios.
 */
export async function benchRateLimit(
  rounds: number,
  seconds: number,
  warmUpSeconds = WARM_UP_SECONDS,
): Promise<string> {
  const child = fork(fileURLToPath(import.meta.url), ['--serve'], {
    execArgv: process.execArgv,
    // The child's stdout (the request log when on) goes to /dev/null.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  try {
    const endpoints = await new Promise<Endpoint[]>((resolve, reject) => {
      child.once('message', (message) => resolve(message as Endpoint[]))
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)))
    })
    const runs = endpoints.map((endpoint) => ({ endpoint }))
    for (const { endpoint } of runs) {
      await ask(child, { log: endpoint.log })
      if (warmUpSeconds > 0) await load(endpoint, warmUpSeconds)
    }
    const samples = new Map<string, Sample[]>(runs.map(({ endpoint }) => [endpoint.name, []]))
    for (let round = 0; round < rounds; round++) {
      for (const { endpoint } of runs) {
        samples.get(endpoint.name)?.push(await sample(child, endpoint, seconds))
      }
    }
    const rpsOf = (name: string) => median((samples.get(name) ?? []).map((s) => s.rps))
    const cpuOf = (name: string) => median((samples.get(name) ?? []).map((s) => s.cpuPerRequest))
    const hello = rpsOf(HELLO)
    const ceiling = rpsOf(CEILING)
    const ceilingCpu = cpuOf(CEILING)
    const rows = runs.map(({ endpoint: e }) => {
      const value = rpsOf(e.name)
      const spread = (samples.get(e.name) ?? []).map((s) => s.rps)
      return [
        e.name,
        Math.round(value),
        `${Math.round(Math.min(...spread))}–${Math.round(Math.max(...spread))}`,
        `${cpuOf(e.name).toFixed(0)} µs`,
        e.identical ? (value / ceiling).toFixed(2) : '',
        e.identical ? (ceilingCpu / cpuOf(e.name)).toFixed(2) : '',
        (value / hello).toFixed(2),
      ]
    })
    const verdict = (name: string) =>
      samples.has(name)
        ? `${(rpsOf(name) / ceiling).toFixed(2)} by req/s, ${(ceilingCpu / cpuOf(name)).toFixed(2)} by CPU`
        : 'not measured (no Redis at 127.0.0.1:6379)'
    return [
      `autocannon: ${CONNECTIONS} connections, \`POST /hash\` with \`${BODY}\` (unpaid), ${warmUpSeconds} s ` +
        `warm-up, then ${rounds} rounds of ${seconds} s per endpoint, interleaved; medians of the ` +
        'rounds. Servers in a child process, its request log off, or on into /dev/null; the ' +
        'limiter never refuses (a quota of 10^9), so every answer is the 402. "server CPU / req" is ' +
        "the server process's user + system CPU time divided by the requests answered: unlike " +
        'req/s it does not depend on how much of the 2 cores the load generator takes.',
      '',
      table(
        [
          'endpoint',
          'req/s (median)',
          'rounds (min–max)',
          'server CPU / req',
          'req/s vs identical 402',
          'CPU: identical 402 / this',
          'req/s vs bare hello',
        ],
        rows,
      ),
      '',
      `Target (issue 11): ours with the limiter on ≥ 0.6 × the identical 402. This run: in memory ` +
        `${verdict(MEMORY)}; on Redis ${verdict(REDIS)}; as deployed (Redis, request log on) ` +
        `${verdict(DEPLOYED)}.`,
    ].join('\n')
  } finally {
    if (child.connected) child.send('stop')
  }
}

if (process.argv.includes('--serve')) {
  await serveChild()
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (flag: string, fallback: number) => {
    const at = process.argv.indexOf(flag)
    return at >= 0 ? Number(process.argv[at + 1]) : fallback
  }
  process.stdout.write(`${await benchRateLimit(arg('--rounds', 5), arg('--seconds', 3))}\n`)
  process.exit(0)
}
