/**
 * The hostile-load section of `npm run bench` (issue 9, "No call can hold the service"):
 *
 * 1. what the worker pool costs, in process: a paid call through the gate (scripted facilitator)
 *    with the tool run inline vs on the pool, the runner's round trip alone, and the structured
 *    clone of a 1 MiB input;
 * 2. the event loop and `GET /health` with and without hostile requests running at once (the 4
 *    costliest paid calls, and the requests without money of issue 27: a payment header nested
 *    3,000 deep, the same over MCP, a 956 KiB MCP `tools/list` of 90,000 `_meta` keys, unpaid 1 MB
 *    `json-validate` bodies and junk payments; one address holding 4,200 connections that send a
 *    byte each, issue 40; the lane bypasses of issue 40: 1 MB bodies with payments that fail
 *    verify, and unpaid 1 MB MCP bodies holding the text `x402/payment`), the service in a child
 *    process with the Node flags of `npm start` (its event-loop delay measured there with
 *    `perf_hooks.monitorEventLoopDelay`, the longest split into running and waiting for a CPU),
 *    the load generator here at a lower priority, and an honest paying client (over MCP beside
 *    the MCP bodies) that must get 200 on every call;
 * 3. how long each hostile call takes to answer, alone.
 *
 * Section 1 also times what the MCP endpoint does on its main thread with a 1 MiB body the free
 * lane could not read (the structural search for its payment, and a paid call's envelope).
 *
 * The child serves the real app, catalogue and worker pool (TOOL_WORKERS, TOOL_TIMEOUT_MS and
 * TOOL_QUEUE_LIMIT at their defaults) over a scripted facilitator that answers at once, so that
 * only our own work is measured: it accepts every payment but those of {@link UNFUNDED}.
 *
 * `npx tsx bench/hostile.ts [--seconds N]` runs the section alone.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { randomUUID } from 'node:crypto'
import { mkdtempSync, openSync, readdirSync, readSync, rmSync } from 'node:fs'
import { connect, type Socket } from 'node:net'
import { availableParallelism, getPriority, loadavg, setPriority, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload } from '@x402/core/types'
import autocannon from 'autocannon'
import { loadConfig } from '../src/config.js'
import { startNodeFlags } from '../src/devnet/child.js'
import { createApp } from '../src/http/app.js'
import { logger } from '../src/logger.js'
import { resolveAllowList } from '../src/mcp/dns-rebinding.js'
import { readPaidEnvelope } from '../src/mcp/envelope.js'
import { registerMcp } from '../src/mcp/server.js'
import { requestPoints } from '../src/payment/quota.js'
import { checkedInput } from '../src/runner/check.js'
import { createToolRunner, type ToolRunner } from '../src/runner/runner.js'
import { createTelemetry } from '../src/telemetry/index.js'
import { catalog, findToolByPath } from '../src/tools/catalog.js'
import type { ToolDefinition } from '../src/tools/types.js'
import {
  BACKREFERENCE,
  HOSTILE_CALLS,
  MAX_PIPELINE,
  MAX_TEXT_DIFF,
  mcpTextOnlyCall,
  mcpToolsCall,
  NESTED_QUANTIFIER,
} from '../test/fixtures/hostile.js'
import { FAKE_PAYER, fakeGate, fakePayload, inlineRunner } from '../test/helpers/fakes.js'
import { listen } from './http.js'
import { median, table, us } from './measure.js'
import { type BenchMode, benchMode, pick } from './mode.js'

/** Targets of issue 9. */
const MAX_DELAY_TARGET_MS = 20
const HEALTH_P99_TARGET_MS = 50
/** /health load: a steady rate, so that latency shows responsiveness, not saturation. */
const HEALTH_RATE = 200
const HEALTH_CONNECTIONS = 4
/**
 * `nice` of this process while it generates load: the clients it stands for run on machines of
 * their own, so it must not take the service's CPU on this one (the children are forked before).
 */
const LOAD_GENERATOR_NICE = 10

const hash = findToolByPath('/hash') as ToolDefinition

/** The payer of the payments the scripted facilitator refuses (`insufficient_funds`). */
const UNFUNDED = '0x000000000000000000000000000000000000dEaD'

// ---------------------------------------------------------------------------------------------
// 1. Pool overhead, in process

/** Median microseconds per call of an async function, `rounds` rounds of `n` sequential calls. */
async function timeAsync(fn: (i: number) => Promise<unknown>, n: number, rounds = 5) {
  for (let i = 0; i < n; i++) await fn(i)
  const perRound: number[] = []
  let k = n
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < n; i++) await fn(k++)
    perRound.push(Number(process.hrtime.bigint() - t0) / 1000 / n)
  }
  return median(perRound)
}

/** Paid calls of /hash through the gate over a scripted facilitator, with the given runner. */
async function gateCalls(runner: ToolRunner, n: number): Promise<number> {
  const fake = fakeGate({}, undefined, { runner })
  const resource = { url: 'http://bench/hash', description: 'hash', mimeType: 'application/json' }
  const payments: PaymentPayload[] = []
  for (let i = 0; i < n * 6; i++) payments.push(await fake.pay(0, `n${i}`))
  return timeAsync(
    (i) =>
      fake.gate.execute({
        tool: hash,
        transport: 'http',
        source: { body: new TextEncoder().encode('{"input":"abc"}') },
        payment: { value: payments[i] },
        resource,
      }),
    n,
  )
}

async function poolOverhead(mode: BenchMode): Promise<string> {
  const n = pick(mode, { full: 500, quick: 100, smoke: 10 })
  const runner = createToolRunner({ workers: 1, timeoutMs: 2000, queueLimit: 0 })
  await runner.warm()
  const small = hash.input.parse({ input: 'abc' })
  const mib = hash.input.parse({ input: 'a'.repeat(1024 * 1024) })
  const env = { nowSeconds: () => 0 }
  try {
    const direct = await timeAsync(async () => hash.run(small, env), n)
    const pooled = await timeAsync(() => runner.admit().run(hash, checkedInput(small), 0), n)
    const gateInline = await gateCalls(inlineRunner(), n)
    const gatePooled = await gateCalls(runner, n)
    const clone = await timeAsync(async () => structuredClone({ tool: 'hash', input: mib }), 20)
    const directMib = await timeAsync(async () => hash.run(mib, env), 20)
    const pooledMib = await timeAsync(() => runner.admit().run(hash, checkedInput(mib), 0), 20)
    return [
      `Sequential calls, median per call over 5 rounds of ${n} (1 MiB rows: 20).`,
      '',
      table(
        ['case', 'inline (main thread)', 'worker pool', 'pool - inline'],
        [
          ['hash "abc": the tool alone', us(direct), us(pooled), us(pooled - direct)],
          [
            'hash "abc": a paid call through the gate (scripted facilitator)',
            us(gateInline),
            us(gatePooled),
            us(gatePooled - gateInline),
          ],
          [
            'hash of 1 MiB: the tool alone',
            us(directMib),
            us(pooledMib),
            us(pooledMib - directMib),
          ],
        ],
      ),
      '',
      `Structured clone of a 1 MiB input (\`structuredClone\`, what posting it to a worker costs): ${us(clone)}.`,
    ].join('\n')
  } finally {
    await runner.close()
  }
}

/**
 * What the MCP endpoint spends on its main thread for a 1 MiB body the free lane could not read:
 * the structural search for `params._meta["x402/payment"]` (src/json-locate.ts), with the payment
 * after 1 MiB of arguments (what a payer's large call is, and what an attacker makes us skim), and
 * the read of a paid call's envelope (its arguments cut out).
 */
function envelopeCost(mode: BenchMode): string {
  const n = pick(mode, { full: 200, quick: 50, smoke: 5 })
  const encoder = new TextEncoder()
  const payment = {
    'x402/payment': { x402Version: 2, payload: { signature: `0x${'ab'.repeat(65)}` } },
  }
  const zeros = { value: new Array(500_000).fill(0), schema: {}, note: 'x402/payment' }
  const cases: [string, Uint8Array][] = [
    ['500,000 zeros, then the payment', encoder.encode(mcpToolsCall(zeros, payment))],
    ['65,000 keys, "x402/payment" only in the arguments', encoder.encode(mcpTextOnlyCall())],
  ]
  // CPU time, not wall time: on a shared machine a wall clock counts the other jobs too.
  const cpuPerCall = (bytes: Uint8Array) => {
    for (let i = 0; i < n; i++) readPaidEnvelope(bytes)
    const rounds: number[] = []
    for (let r = 0; r < 5; r++) {
      const before = process.cpuUsage()
      for (let i = 0; i < n; i++) readPaidEnvelope(bytes)
      const used = process.cpuUsage(before)
      rounds.push((used.user + used.system) / n)
    }
    return median(rounds)
  }
  const rows = cases.map(([name, bytes]) => [
    name,
    `${(bytes.length / 1024).toFixed(0)} KiB`,
    us(cpuPerCall(bytes)),
    String(readPaidEnvelope(bytes)?.status ?? "none (the free lane's 503 stands)"),
  ])
  return table(['MCP body', 'size', 'CPU per body, median of 5 rounds', 'envelope'], rows)
}

// ---------------------------------------------------------------------------------------------
// 2. The service under hostile load, in a child process

interface Delay {
  maxMs: number
  p99Ms: number
  meanMs: number
  /** The longest delay a 1 ms timer saw, split by where the main thread was (Linux only). */
  longest?: DelaySplit
}

/**
 * One event-loop delay, split from the main thread's `/proc/thread-self/schedstat`: milliseconds
 * it ran (our JavaScript and the GC's pauses) and milliseconds it was runnable but waited for a
 * CPU (the machine's share); for the rest of `delayMs` it was blocked (asleep on a lock or a
 * late wake-up).
 */
interface DelaySplit {
  delayMs: number
  cpuMs: number
  waitMs: number
}

/**
 * Follows the main thread's delays with a 1 ms timer and keeps the longest, split into running
 * and waiting (see {@link DelaySplit}); `undefined` where schedstat is missing (not Linux).
 */
function splitDelays(): { reset(): void; read(): DelaySplit } | undefined {
  let fd: number
  try {
    fd = openSync('/proc/thread-self/schedstat', 'r')
  } catch {
    return undefined
  }
  const buffer = Buffer.alloc(96)
  // Nanoseconds on a CPU and waiting on a run queue; the file is re-read from offset 0.
  const sample = () => {
    const fields = buffer
      .toString('latin1', 0, readSync(fd, buffer, 0, buffer.length, 0))
      .split(' ')
    return { cpu: Number(fields[0]), wait: Number(fields[1]) }
  }
  const none = (): DelaySplit => ({ delayMs: 0, cpuMs: 0, waitMs: 0 })
  let longest = none()
  let at = performance.now()
  let last = sample()
  setInterval(() => {
    const now = performance.now()
    const current = sample()
    if (now - at > longest.delayMs) {
      longest = {
        delayMs: now - at,
        cpuMs: (current.cpu - last.cpu) / 1e6,
        waitMs: (current.wait - last.wait) / 1e6,
      }
    }
    at = now
    last = current
  }, 1).unref()
  return {
    reset: () => {
      longest = none()
    },
    read: () => longest,
  }
}

/** Answers `reset` and `read` about an event-loop delay histogram (and its longest delay's split). */
function reportDelay(
  delay: ReturnType<typeof monitorEventLoopDelay>,
  split?: ReturnType<typeof splitDelays>,
): void {
  process.on('message', (message) => {
    if (message === 'reset') {
      delay.reset()
      split?.reset()
      process.send?.('reset')
    } else if (message === 'read') {
      const ms = (ns: number) => ns / 1e6
      process.send?.({
        maxMs: ms(delay.max),
        p99Ms: ms(delay.percentile(99)),
        meanMs: ms(delay.mean),
        ...(split ? { longest: split.read() } : {}),
      } satisfies Delay)
    }
  })
}

/**
 * The control: an idle process that only measures its own event-loop delay, at the same times as
 * the service. What it sees is the machine (other jobs, scheduling), not our code.
 */
function controlChild(): void {
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  reportDelay(delay)
  process.on('message', (message) => {
    if (message === 'stop') process.exit(0)
  })
  process.send?.({ url: '', workers: 0, timeoutMs: 0 })
}

async function serveChild(): Promise<void> {
  logger.level = 'silent'
  const config = loadConfig({ PORT: '0', LOG_LEVEL: 'silent' })
  const runner = createToolRunner({
    workers: config.toolWorkers,
    timeoutMs: config.toolTimeoutMs,
    queueLimit: config.toolQueueLimit,
  })
  await runner.warm()
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-hostile-'))
  const telemetry = await createTelemetry({ dataDir, salt: 'bench-hostile-salt-000' })
  const { gate } = fakeGate(
    {
      verify: async (payment) => {
        const from = (payment.payload as { authorization?: { from?: string } }).authorization?.from
        return from === UNFUNDED
          ? { isValid: false, invalidReason: 'insufficient_funds', payer: from }
          : { isValid: true, payer: from ?? FAKE_PAYER }
      },
    },
    undefined,
    { runner },
  )
  const publicBaseUrl = 'http://127.0.0.1'
  const app = createApp({
    gate,
    tools: catalog,
    publicBaseUrl,
    stats: () => telemetry.stats(),
    mounts: [
      (app) =>
        registerMcp(app, {
          gate,
          tools: catalog,
          publicBaseUrl,
          allowList: resolveAllowList({ publicBaseUrl, allowedHosts: ['*'] }),
        }),
    ],
  })
  const target = await listen(app.fetch)
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  process.send?.({ url: target.url, workers: config.toolWorkers, timeoutMs: config.toolTimeoutMs })
  reportDelay(delay, splitDelays())
  process.on('message', async (message) => {
    if (message === 'stop') {
      await target.close()
      await runner.close()
      await telemetry.close()
      rmSync(dataDir, { recursive: true, force: true })
      process.exit(0)
    }
  })
}

/** The child, spoken to over IPC. */
interface Child {
  url: string
  workers: number
  timeoutMs: number
  ask<T>(message: string): Promise<T>
  stop(): void
}

async function startChild(mode: '--serve' | '--control'): Promise<Child> {
  const child: ChildProcess = fork(fileURLToPath(import.meta.url), [mode], {
    execArgv:
      mode === '--serve'
        ? // The Node flags of `npm start`, with which the service is deployed.
          [...process.execArgv, ...startNodeFlags()]
        : process.execArgv,
  })
  const info = await new Promise<{ url: string; workers: number; timeoutMs: number }>(
    (resolve, reject) => {
      child.once('message', (m) =>
        resolve(m as { url: string; workers: number; timeoutMs: number }),
      )
      child.once('exit', (code) => reject(new Error(`server process exited with ${code}`)))
    },
  )
  return {
    ...info,
    ask: <T>(message: string) =>
      new Promise<T>((resolve) => {
        child.once('message', (m) => resolve(m as T))
        child.send(message)
      }),
    stop: () => {
      if (child.connected) child.send('stop')
    },
  }
}

/**
 * Sets the `nice` of every thread of this process (Linux's nice is per thread: the GC's helper
 * threads and libuv's pool keep theirs otherwise), or of the process where /proc is missing.
 */
function renice(nice: number): void {
  let threads: string[]
  try {
    threads = readdirSync('/proc/self/task')
  } catch {
    setPriority(nice)
    return
  }
  for (const tid of threads) setPriority(Number(tid), nice)
}

/** Pays for calls with fresh payments on the scripted facilitator, built from each tool's 402. */
function payer(base: string) {
  const required = new Map<string, PaymentPayload['accepted']>()
  return async (path: string, body: unknown): Promise<{ status: number; code?: string }> => {
    const text = JSON.stringify(body)
    let accepted = required.get(path)
    if (!accepted) {
      const unpaid = await fetch(`${base}${path}`, { method: 'POST', body: '{}' })
      await unpaid.arrayBuffer()
      const offer = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED') ?? '')
      accepted = offer.accepts[0] as PaymentPayload['accepted']
      required.set(path, accepted)
    }
    const payment: PaymentPayload = {
      x402Version: 2,
      accepted,
      payload: fakePayload(accepted, randomUUID()),
    }
    const res = await fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment),
      },
      body: text,
    })
    const parsed = (await res.json()) as { code?: string }
    return { status: res.status, ...(parsed.code ? { code: parsed.code } : {}) }
  }
}

/**
 * The requests without money of issue 27, each as a client without a wallet sends it: a status
 * comes back (a 402, a 400 or a 429, never a 200 nor a 5xx).
 */
function unpaidAttacks(base: string): { name: string; send(): Promise<number> }[] {
  const accepted = {
    scheme: 'exact',
    network: 'eip155:8453',
    amount: '1000',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    payTo: '0x0000000000000000000000000000000000000001',
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  }
  const deep = JSON.stringify({
    x402Version: 2,
    accepted: { ...accepted, junk: 'JUNK' },
    payload: {},
  }).replace('"JUNK"', `${'['.repeat(3000)}"${'x'.repeat(16_000)}"${']'.repeat(3000)}`)
  const junk = JSON.stringify({
    x402Version: 2,
    accepted,
    payload: {
      authorization: { from: `0x${'ab'.repeat(20)}`, value: 'x', nonce: `0x${'cd'.repeat(32)}` },
      signature: '0x00',
    },
  })
  const mcp = (text: string) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
      },
      body: text,
    })
  const meta = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 0]))
  const wide = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/list',
    params: { _meta: meta },
  })
  const deepCall = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: { name: 'payload_hash', arguments: { input: 'x' }, _meta: { 'x402/payment': 'P' } },
  }).replace('"P"', deep)
  const zeros = JSON.stringify({ value: new Array(500_000).fill(0), schema: {} })
  const header = (json: string) => ({
    'Content-Type': 'application/json',
    'PAYMENT-SIGNATURE': Buffer.from(json).toString('base64'),
  })
  const status = async (res: Promise<Response>) => {
    const r = await res
    await r.arrayBuffer()
    return r.status
  }
  return [
    {
      name: 'PAYMENT-SIGNATURE nested 3,000 deep in accepted',
      send: () =>
        status(fetch(`${base}/hash`, { method: 'POST', headers: header(deep), body: '{}' })),
    },
    { name: 'the same payment over MCP', send: () => status(mcp(deepCall)) },
    { name: 'MCP tools/list of 956 KiB, 90,000 _meta keys', send: () => status(mcp(wide)) },
    {
      name: 'unpaid json-validate of 500,000 zeros',
      send: () => status(fetch(`${base}/json-validate`, { method: 'POST', body: zeros })),
    },
    {
      name: 'junk payment, "value":"x"',
      send: () =>
        status(fetch(`${base}/hash`, { method: 'POST', headers: header(junk), body: '{}' })),
    },
  ]
}

/** The connection flood of issue 40: connections one address keeps open, a byte on each. */
const FLOOD_CONNECTIONS = 4200
/**
 * The flood's address: another of this machine (127.0.0.0/8 is loopback) than the 127.0.0.1 of
 * the honest payer, the probes and /health, each of which is another client.
 */
const FLOOD_ADDRESS = '127.0.0.3'
const FLOOD_NAME = `one address (${FLOOD_ADDRESS}) keeping ${FLOOD_CONNECTIONS.toLocaleString('en-US')} connections open, a byte each`

/**
 * One address keeping `count` connections open, each sending one byte and nothing more (no
 * request is ever parsed, no rate-limit point taken); a connection that closes is opened again a
 * second later. `outcomes` gets one entry per closed connection: refused at accept (closed
 * without a byte of answer) or answered 408 once it had held a place for the headers timeout.
 */
function connectionFlood(base: string, count: number) {
  const { hostname, port } = new URL(base)
  const outcomes: string[] = []
  const open = new Set<Socket>()
  let running = true
  const start = (): Promise<void> =>
    new Promise((resolve) => {
      const socket = connect({ host: hostname, port: Number(port), localAddress: FLOOD_ADDRESS })
      let answer = ''
      socket.on('data', (chunk: Buffer) => {
        answer += chunk.toString('latin1')
      })
      socket.on('error', () => {})
      socket.once('connect', () => {
        if (!running) socket.destroy()
        else {
          open.add(socket)
          socket.write('G')
        }
        resolve()
      })
      socket.once('close', () => {
        open.delete(socket)
        resolve()
        // Closed by the service, not by the end of the phase.
        if (!running) return
        outcomes.push(
          answer === ''
            ? 'refused at accept'
            : answer.startsWith('HTTP/1.1 408 ')
              ? '408 after holding a place'
              : (answer.split('\r\n')[0] ?? ''),
        )
        setTimeout(() => running && start(), 1000)
      })
    })
  void (async () => {
    // In batches, within the listen backlog.
    for (let i = 0; i < count && running; i += 100) {
      await Promise.all(Array.from({ length: Math.min(100, count - i) }, start))
    }
  })()
  return {
    outcomes,
    stop: () => {
      running = false
      for (const socket of open) socket.destroy()
    },
  }
}

/** A fresh `exact` payment for `path`'s offer (read once from its 402), by `from`. */
function payments(base: string) {
  const offers = new Map<string, Promise<PaymentPayload['accepted']>>()
  const offer = (path: string) => {
    let accepted = offers.get(path)
    if (!accepted) {
      accepted = fetch(`${base}${path}`, { method: 'POST', body: '{}' }).then(async (res) => {
        await res.arrayBuffer()
        const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
        return required.accepts[0] as PaymentPayload['accepted']
      })
      offers.set(path, accepted)
    }
    return accepted
  }
  return async (path: string, from = FAKE_PAYER): Promise<PaymentPayload> => {
    const accepted = await offer(path)
    const payload = fakePayload(accepted, randomUUID())
    const authorization = payload.authorization as Record<string, unknown>
    return {
      x402Version: 2,
      accepted,
      payload: { ...payload, authorization: { ...authorization, from } },
    }
  }
}

/** Posts a JSON-RPC body to /mcp as an MCP client would. */
const mcpPost = (base: string, body: string | Uint8Array) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body,
  })

/**
 * Pays for `tools/call` over MCP with fresh payments in `_meta["x402/payment"]`: 200 with no code
 * when the call's result is the paid envelope; else the HTTP status and the failure's code.
 */
function mcpPayer(base: string) {
  const pay = payments(base)
  return async (
    tool: ToolDefinition,
    args: unknown,
  ): Promise<{ status: number; code?: string }> => {
    const payment = await pay(tool.path)
    const res = await mcpPost(
      base,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        method: 'tools/call',
        params: { name: tool.mcpName, arguments: args, _meta: { 'x402/payment': payment } },
      }),
    )
    const body = (await res.json()) as {
      code?: string
      result?: {
        structuredContent?: { ok?: boolean }
        _meta?: Record<string, { code?: string } | undefined>
      }
    }
    if (body.result?.structuredContent?.ok === true) return { status: res.status }
    const code = body.result?._meta?.['payload-tools/failure']?.code ?? body.code ?? 'no result'
    return { status: res.status, code }
  }
}

/** Clients of each lane-bypass phase (issue 40's red team: 20 and 48 addresses). */
const LANE_CLIENTS = { fakePaid: 20, mcpText: 48 }

/**
 * How often one address may send a body of `bytes` at the deployed rate limit, in milliseconds:
 * its points (one per started 64 KiB) at RATE_LIMIT_POINTS per RATE_LIMIT_DURATION_S.
 */
function addressPeriodMs(bytes: number): number {
  const { rateLimitPoints, rateLimitDurationS } = loadConfig({})
  return (requestPoints(bytes) * rateLimitDurationS * 1000) / rateLimitPoints
}

/** One client of a lane-bypass phase: what it sends, and how often (ms between two sends). */
interface LaneClient {
  name: string
  periodMs: number
  send(): Promise<string>
}

/**
 * The lane bypasses of issue 40 (round three, findings 4 and 5), each client an address sending
 * at the deployed rate limit: a 1 MB `json-validate` body with a well-formed payment whose payer
 * has no funds (verify fails), or an unpaid 1 MB MCP `tools/call` holding the text
 * `x402/payment` in its arguments. The child has no rate limiter, so the clients pace themselves.
 */
async function laneAttacks(base: string, load: 'fake-paid' | 'mcp-text'): Promise<LaneClient[]> {
  const outcome = async (answer: Promise<Response>) => {
    try {
      const res = await answer
      const body = (await res.json()) as {
        code?: string
        result?: { _meta?: Record<string, { code?: string } | undefined> }
      }
      return `${res.status} ${body.result?._meta?.['payload-tools/failure']?.code ?? body.code}`
    } catch (error) {
      return `no answer (${(error as Error).message})`
    }
  }
  if (load === 'fake-paid') {
    const zeros = Buffer.from(JSON.stringify({ value: new Array(500_000).fill(0), schema: {} }))
    const pay = payments(base)
    return Promise.all(
      Array.from({ length: LANE_CLIENTS.fakePaid }, async () => {
        const header = encodePaymentSignatureHeader(await pay('/json-validate', UNFUNDED))
        return {
          name: '1 MB json-validate with a payment that fails verify',
          periodMs: addressPeriodMs(zeros.length),
          send: () =>
            outcome(
              fetch(`${base}/json-validate`, {
                method: 'POST',
                headers: { 'Content-Type': 'application/json', 'PAYMENT-SIGNATURE': header },
                body: zeros,
              }),
            ),
        }
      }),
    )
  }
  const text = Buffer.from(mcpTextOnlyCall())
  return Array.from({ length: LANE_CLIENTS.mcpText }, () => ({
    name: 'unpaid 1 MB MCP tools/call holding "x402/payment"',
    periodMs: addressPeriodMs(text.length),
    send: () => outcome(mcpPost(base, text)),
  }))
}

interface Phase {
  name: string
  delay: Delay
  /** The idle control process over the same time. */
  control: Delay
  health: { p50: number; p99: number; max: number; rps: number }
  /** Sequential unpaid 402s and /stats reads during the phase: the slowest, in ms. */
  probeMaxMs: number
  honest: number[]
  /** The honest payer's answers that were not 200: `status code`. */
  honestFailures: string[]
  hostile: Map<string, string[]>
}

/**
 * What runs beside the /health load in a phase: nothing, the 4 costliest paid calls (issue 9),
 * the requests without money of issue 27, or the connection flood of issue 40; an honest payer in
 * every hostile phase.
 */
type Load = 'none' | 'paid' | 'unpaid' | 'connections' | 'fake-paid' | 'mcp-text'

const PHASE_NAMES: Record<Load, string> = {
  none: 'no hostile call',
  paid: 'the 4 costliest paid calls at once + an honest payer',
  unpaid: 'the 5 requests without money at once + an honest payer',
  connections: `${FLOOD_NAME} + an honest payer`,
  'fake-paid': `${LANE_CLIENTS.fakePaid} addresses at their rate limit: 1 MB bodies with payments that fail verify + an honest payer`,
  'mcp-text': `${LANE_CLIENTS.mcpText} addresses at their rate limit: unpaid 1 MB MCP bodies holding "x402/payment" + an honest MCP payer`,
}

/** Runs /health load, and the hostile `load` with an honest payer, for `seconds`. */
async function phase(child: Child, control: Child, seconds: number, load: Load): Promise<Phase> {
  const pay = payer(child.url)
  let running = true
  const honest: number[] = []
  const honestFailures: string[] = []
  const outcomes = new Map<string, string[]>()
  const loops: Promise<void>[] = []
  let probeMaxMs = 0
  // Warm the 402s before measuring.
  await pay('/hash', { input: 'warm' })
  for (const call of HOSTILE_CALLS) await fetch(`${child.url}${call.path}`, { method: 'POST' })
  await Promise.all([child.ask('reset'), control.ask('reset')])
  if (load === 'paid') {
    for (const call of HOSTILE_CALLS) {
      const list: string[] = []
      outcomes.set(call.name, list)
      loops.push(
        (async () => {
          while (running) {
            const r = await pay(call.path, call.body)
            list.push(r.status === 200 ? '200' : `${r.status} ${r.code}`)
          }
        })(),
      )
    }
  }
  if (load === 'unpaid') {
    for (const attack of unpaidAttacks(child.url)) {
      const list: string[] = []
      outcomes.set(attack.name, list)
      loops.push(
        (async () => {
          while (running) list.push(String(await attack.send()))
        })(),
      )
    }
  }
  const flood = load === 'connections' ? connectionFlood(child.url, FLOOD_CONNECTIONS) : undefined
  if (flood) outcomes.set(FLOOD_NAME, flood.outcomes)
  if (load === 'fake-paid' || load === 'mcp-text') {
    // Each client at its address's rate, starting at a random point of its period.
    const pause = async (ms: number) => {
      const until = performance.now() + ms
      while (running && performance.now() < until) {
        await new Promise((resolve) =>
          setTimeout(resolve, Math.min(100, until - performance.now())),
        )
      }
    }
    for (const attack of await laneAttacks(child.url, load)) {
      const list = outcomes.get(attack.name) ?? []
      outcomes.set(attack.name, list)
      loops.push(
        (async () => {
          await pause(Math.random() * attack.periodMs)
          while (running) {
            const t0 = performance.now()
            list.push(await attack.send())
            await pause(attack.periodMs - (performance.now() - t0))
          }
        })(),
      )
    }
  }
  if (load !== 'none') {
    // An honest payer, with a small body (checked on the main thread) and one over 1 KiB (on a
    // checker lane): beside the hostile calls, each must be answered 200. Over MCP beside the MCP
    // bodies.
    const large = { value: new Array(600).fill(1), schema: { type: 'array' } }
    const payMcp = mcpPayer(child.url)
    const jsonValidate = findToolByPath('/json-validate') as ToolDefinition
    loops.push(
      (async () => {
        for (let i = 0; running; i++) {
          const t0 = performance.now()
          const r =
            load === 'mcp-text'
              ? await payMcp(
                  i % 2 === 0 ? hash : jsonValidate,
                  i % 2 === 0 ? { input: 'honest' } : large,
                )
              : i % 2 === 0
                ? await pay('/hash', { input: 'honest' })
                : await pay('/json-validate', large)
          honest.push(performance.now() - t0)
          if (r.status !== 200 || r.code) honestFailures.push(`${r.status} ${r.code}`)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
      })(),
    )
  }
  loops.push(
    (async () => {
      while (running) {
        for (const [url, init] of [
          [`${child.url}/hash`, { method: 'POST', body: '{"input":"abc"}' }],
          [`${child.url}/stats`, {}],
        ] as const) {
          const t0 = performance.now()
          const res = await fetch(url, init)
          await res.arrayBuffer()
          probeMaxMs = Math.max(probeMaxMs, performance.now() - t0)
        }
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    })(),
  )
  const health = await autocannon({
    url: `${child.url}/health`,
    connections: HEALTH_CONNECTIONS,
    overallRate: HEALTH_RATE,
    duration: seconds,
  })
  running = false
  flood?.stop()
  await Promise.all(loops)
  const [delay, controlDelay] = await Promise.all([
    child.ask<Delay>('read'),
    control.ask<Delay>('read'),
  ])
  return {
    name: PHASE_NAMES[load],
    delay,
    control: controlDelay,
    health: {
      p50: health.latency.p50,
      p99: health.latency.p99,
      max: health.latency.max,
      rps: Math.round(health.requests.average),
    },
    probeMaxMs,
    honest,
    honestFailures,
    hostile: outcomes,
  }
}

/** Each hostile call alone, `n` times: its outcome and median time to answer. */
async function alone(child: Child, n: number): Promise<(string | number)[][]> {
  const pay = payer(child.url)
  const rows: (string | number)[][] = []
  for (const call of [NESTED_QUANTIFIER, BACKREFERENCE, MAX_TEXT_DIFF, MAX_PIPELINE]) {
    const times: number[] = []
    const seen = new Set<string>()
    for (let i = 0; i < n; i++) {
      const t0 = performance.now()
      const r = await pay(call.path, call.body)
      times.push(performance.now() - t0)
      seen.add(r.status === 200 ? '200' : `${r.status} ${r.code}`)
    }
    rows.push([call.name, [...seen].join(', '), `${median(times).toFixed(0)} ms`])
  }
  return rows
}

const summary = (list: string[]) => {
  const counts = new Map<string, number>()
  for (const item of list) counts.set(item, (counts.get(item) ?? 0) + 1)
  return [...counts].map(([k, v]) => `${v}× ${k}`).join(', ')
}

/**
 * The hostile-load section: Markdown with the pool overhead, the event-loop delay and /health
 * latency with and without hostile calls (and whether the targets hold), and the time each
 * hostile call takes to answer.
 *
 * @param seconds - measured seconds per phase
 */
export async function benchHostile(seconds: number, mode: BenchMode = 'full'): Promise<string> {
  const load = loadavg()
  const overhead = await poolOverhead(mode)
  const envelope = envelopeCost(mode)
  const child = await startChild('--serve')
  const control = await startChild('--control')
  const priority = getPriority()
  renice(Math.max(priority, LOAD_GENERATOR_NICE))
  try {
    const phases = [
      await phase(child, control, seconds, 'none'),
      await phase(child, control, seconds, 'paid'),
      await phase(child, control, seconds, 'unpaid'),
      await phase(child, control, seconds, 'connections'),
      await phase(child, control, seconds, 'fake-paid'),
      await phase(child, control, seconds, 'mcp-text'),
    ]
    const times = await alone(child, pick(mode, { full: 3, quick: 1, smoke: 1 }))
    const verdict = (value: number, target: number) =>
      `${value.toFixed(1)} ms ${value < target ? '(target met)' : `(target ${target} ms MISSED)`}`
    const honestLine = (p: Phase) => {
      const slowest = Math.max(0, ...p.honest)
      const answered = p.honest.length - p.honestFailures.length
      const failures = p.honestFailures.length
        ? `NOT 200: ${summary(p.honestFailures)}`
        : 'every one'
      return (
        `- ${p.name}: ${p.honest.length} honest paid calls, ${answered} answered 200 (${failures}), ` +
        `median ${median(p.honest).toFixed(1)} ms, slowest ${slowest.toFixed(0)} ms; ` +
        [...p.hostile].map(([name, list]) => `${name}: ${summary(list)}`).join('; ')
      )
    }
    return [
      '### Pool overhead per call',
      '',
      overhead,
      '',
      '### A paid MCP body the free lane could not read (main thread)',
      '',
      envelope,
      '',
      '### Event loop and /health under hostile load',
      '',
      `Load average of the machine at the start: ${load.map((l) => l.toFixed(1)).join(', ')} ` +
        `(${availableParallelism()} cores, shared: delays include time the process was not scheduled).`,
      '',
      `Service in a child process: real app with /mcp, catalogue and worker pool (${child.workers} ` +
        `workers, ${child.timeoutMs} ms budget), scripted facilitator. ${seconds} s per phase; ` +
        `/health at ${HEALTH_RATE} req/s over ${HEALTH_CONNECTIONS} connections (autocannon); an ` +
        'unpaid 402 and /stats probed in turn every 50 ms. The hostile phases run, each in a loop, ' +
        'the 4 costliest paid calls of test/fixtures/hostile.ts (issue 9), the 5 requests ' +
        `without money of issue 27, one address (${FLOOD_ADDRESS}) keeping ` +
        `${FLOOD_CONNECTIONS.toLocaleString('en-US')} connections open with a byte each (issue 40; ` +
        'a closed one is opened again a second later), or the lane bypasses of issue 40 (1 MB json-validate bodies ' +
        'with payments the facilitator refuses; unpaid 1 MB MCP tools/call bodies holding ' +
        '"x402/payment" in their arguments; each client an address sending at the deployed rate ' +
        `limit, a 1 MiB body every ${addressPeriodMs(1024 * 1024) / 1000} s), beside an honest ` +
        'payer every 100 ms (/hash, and ' +
        '/json-validate with a body over 1 KiB; over MCP beside the MCP bodies). The control is an idle Node process measuring its own ' +
        'event-loop delay over the same time: the share of the machine. The load generator runs ' +
        `at nice ${LOAD_GENERATOR_NICE}, as clients on other machines would; the service's ` +
        "longest delay is split, from its main thread's schedstat, into time running (our code " +
        'and GC pauses) and time waiting for a CPU.',
      '',
      table(
        [
          'phase',
          'event-loop max delay',
          'event-loop p99 delay',
          'longest delay: running, waiting for a CPU',
          'control process: max, p99',
          '/health p50',
          '/health p99',
          '/health max',
          'slowest 402 or /stats',
        ],
        phases.map((p) => [
          p.name,
          verdict(p.delay.maxMs, MAX_DELAY_TARGET_MS),
          `${p.delay.p99Ms.toFixed(1)} ms`,
          p.delay.longest
            ? `${p.delay.longest.delayMs.toFixed(1)} ms: ${p.delay.longest.cpuMs.toFixed(1)} ms, ${p.delay.longest.waitMs.toFixed(1)} ms`
            : 'n/a (no schedstat)',
          `${p.control.maxMs.toFixed(1)} ms, ${p.control.p99Ms.toFixed(1)} ms`,
          `${p.health.p50} ms`,
          verdict(p.health.p99, HEALTH_P99_TARGET_MS),
          `${p.health.max} ms`,
          `${p.probeMaxMs.toFixed(1)} ms`,
        ]),
      ),
      '',
      ...phases.slice(1).map(honestLine),
      '',
      '### Each hostile call alone (time to answer, median)',
      '',
      table(['call', 'answer', 'time'], times),
    ].join('\n')
  } finally {
    child.stop()
    control.stop()
    try {
      renice(priority)
    } catch {
      // Lowering nice back needs CAP_SYS_NICE: the sections after this one run niced then.
    }
  }
}

if (process.argv.includes('--serve')) {
  await serveChild()
} else if (process.argv.includes('--control')) {
  controlChild()
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  logger.level = 'silent'
  const flag = process.argv.indexOf('--seconds')
  process.stdout.write(
    `${await benchHostile(flag >= 0 ? Number(process.argv[flag + 1]) : 10, benchMode())}\n`,
  )
  process.exit(0)
}
