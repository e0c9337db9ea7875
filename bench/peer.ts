/**
 * Paid calls against the peer (issue 18): the service as deployed, and a minimal Hono app on the
 * official `@x402/hono` `paymentMiddleware` (the peer), both selling `POST /hash` on the same two
 * rails (Base and Solana, scheme `exact`) over the same scripted facilitator.
 *
 * - Three child processes: the scripted facilitator (an HTTP server answering `/supported`,
 *   `/verify` and `/settle` at once, and the two Solana RPC methods the official SVM client needs
 *   to build a payment), ours and the peer. Both servers reach the facilitator over HTTP, as in
 *   production, and autocannon (in this process) shares the event loop of neither.
 * - Ours as deployed: `createService` with the rate limiter on (in memory, one instance), the
 *   request log at `info` (into /dev/null), telemetry on SQLite in a temporary directory, receipts
 *   signed with a generated Ed25519 key, the tool and checker worker pools at their defaults.
 * - Every paid request carries a fresh payment, really signed by the official client
 *   (`x402Client` with the `exact` EVM scheme on a viem account and the `exact` SVM scheme on a
 *   @solana/kit signer, alternately) from that server's own 402: each round's payments are signed
 *   before the round starts, and a round that would run out of them is run again with more.
 * - Each endpoint is loaded by autocannon (10 connections), in rounds of a few seconds, ours and
 *   the peer interleaved; each child reports its process CPU time (every thread:
 *   `process.cpuUsage`) and its main thread's busy time (`performance.eventLoopUtilization`) per
 *   round over IPC. Every answer that is not the expected status is counted by status and code.
 *
 * `npx tsx bench/peer.ts [--rounds N] [--seconds S] [--profile DIR]` runs this section alone;
 * `--profile DIR` writes V8 CPU profiles of both servers into DIR/ours and DIR/peer (`node
 * --cpu-prof`), `--only paid|unpaid` loads one path only, `--ledger-off` adds a third server: ours
 * without the settlement ledger, measured in the same rounds (what the ledger costs); `--cluster`
 * runs ours as a cluster instance (PostgreSQL telemetry and ledger in a schema of its own, the
 * guard and rate limits on the machine's Redis).
 *
 * Ours runs with `npm start`'s node flags (`startNodeFlags`); the peer with node's defaults.
 */
import { type ChildProcess, fork } from 'node:child_process'
import { generateKeyPairSync, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { fileURLToPath } from 'node:url'
import { address, generateKeyPairSigner, getBase58Decoder, some } from '@solana/kit'
import { getMintEncoder, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { x402Client } from '@x402/core/client'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http'
import { HTTPFacilitatorClient } from '@x402/core/server'
import type { Network, PaymentRequired, PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme as ExactEvmClient } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactEvmServer } from '@x402/evm/exact/server'
import { paymentMiddleware, x402ResourceServer } from '@x402/hono'
import { ExactSvmScheme as ExactSvmClient } from '@x402/svm/exact/client'
import { ExactSvmScheme as ExactSvmServer } from '@x402/svm/exact/server'
import autocannon from 'autocannon'
import { Hono } from 'hono'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { loadConfig } from '../src/config.js'
import { startNodeFlags } from '../src/devnet/child.js'
import { MAX_TIMEOUT_SECONDS } from '../src/facilitators/link.js'
import { logger } from '../src/logger.js'
import { configuredRails, priceOn } from '../src/payment/rails.js'
import { createService } from '../src/service.js'
import { createTelemetry } from '../src/telemetry/index.js'
import { hashTool } from '../src/tools/hash.js'
import { createTestSchema } from '../test/helpers/pg-schema.js'
import { listen } from './http.js'
import { median, roundRatios, table } from './measure.js'

const CONNECTIONS = 10
/** The machine's Redis, for ours as an instance of the cluster (`--cluster`). */
const CLUSTER_REDIS_URL = 'redis://127.0.0.1:6379'
const BODY = JSON.stringify({ input: 'abc' })
const SOLANA: Network = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
const FEE_PAYER = 'EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd'
const PAY_TO_EVM = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const PAY_TO_SOLANA = '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4'
const USDC_SOLANA = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'
/** The payer the scripted facilitator names for a Solana payment (it checks no signature). */
const SOLANA_PAYER = '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin'
/** Payments signed per round: this many times the round's expected requests, plus a margin. */
const PRESIGN_MARGIN = 1.6
const PRESIGN_EXTRA = 50
/** Paid requests per second presigned for before any was measured. */
const FIRST_GUESS_RPS = 400

/** The rails of both servers, as our configuration builds them. */
const RAILS = configuredRails({
  payToEvm: PAY_TO_EVM,
  payToSolana: PAY_TO_SOLANA,
  usdcEvm: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  usdcSolana: USDC_SOLANA,
  solanaNetwork: SOLANA,
  railOrder: ['evm', 'solana'],
})

// ---------------------------------------------------------------------------------------------
// The scripted facilitator (and the Solana RPC methods the official SVM client calls).

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

function sendJson(res: ServerResponse, body: unknown): void {
  const text = JSON.stringify(body)
  res.writeHead(200, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
  })
  res.end(text)
}

/** The 82-byte SPL Token mint of USDC (6 decimals), as `getAccountInfo` returns it in base64. */
function mintAccount(): string {
  const data = getMintEncoder().encode({
    mintAuthority: some(address(FEE_PAYER)),
    supply: 1_000_000_000_000n,
    decimals: 6,
    isInitialized: true,
    freezeAuthority: null,
  })
  return Buffer.from(data).toString('base64')
}

/**
 * Child: the scripted facilitator. `/verify` accepts every payment and `/settle` settles it at
 * once (a random transaction id); both parse the request as a real facilitator must. Counts the
 * settlements per resource origin, for the parent's check that every 200 was settled once.
 */
async function facilitatorChild(): Promise<void> {
  const supported = {
    kinds: [
      { x402Version: 2, scheme: 'exact', network: 'eip155:8453' },
      { x402Version: 2, scheme: 'exact', network: SOLANA, extra: { feePayer: FEE_PAYER } },
    ],
    extensions: [],
    signers: {},
  }
  const mint = mintAccount()
  const base58 = getBase58Decoder()
  const settled = new Map<string, number>()
  const payerOf = (payment: { payload?: { authorization?: { from?: string } } }) =>
    payment.payload?.authorization?.from ?? SOLANA_PAYER
  const server = createServer(async (req, res) => {
    const text = await readBody(req)
    if (req.url === '/supported') return sendJson(res, supported)
    const body = JSON.parse(text)
    if (req.url === '/verify') {
      return sendJson(res, { isValid: true, payer: payerOf(body.paymentPayload) })
    }
    if (req.url === '/settle') {
      const network = body.paymentRequirements.network as string
      const origin = new URL(body.paymentPayload.resource.url).origin
      settled.set(origin, (settled.get(origin) ?? 0) + 1)
      return sendJson(res, {
        success: true,
        transaction: network.startsWith('eip155:')
          ? `0x${randomBytes(32).toString('hex')}`
          : base58.decode(randomBytes(64)),
        network,
        payer: payerOf(body.paymentPayload),
      })
    }
    if (req.url === '/rpc') {
      const result =
        body.method === 'getAccountInfo'
          ? {
              context: { slot: 1 },
              value: {
                data: [mint, 'base64'],
                executable: false,
                lamports: 1_461_600,
                owner: TOKEN_PROGRAM_ADDRESS,
                rentEpoch: 0,
                space: 82,
              },
            }
          : {
              context: { slot: 1 },
              value: { blockhash: base58.decode(randomBytes(32)), lastValidBlockHeight: 1_000_000 },
            }
      return sendJson(res, { jsonrpc: '2.0', id: body.id, result })
    }
    res.writeHead(404).end()
  })
  server.keepAliveTimeout = 60_000
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  process.send?.({ url: `http://127.0.0.1:${port}` })
  process.on('message', (message) => {
    if (message === 'settled') process.send?.(Object.fromEntries(settled))
    else process.exit(0)
  })
}

// ---------------------------------------------------------------------------------------------
// The two servers.

/** What a server child reports for one round: deltas since its last `mark`. */
export interface Usage {
  /** Process CPU time (user + system, every thread), microseconds. */
  cpuMicros: number
  /** Main-thread busy time (event-loop utilization × wall time), milliseconds. */
  activeMs: number
  /**
   * CPU time of the main thread alone (Linux: `/proc/self/task/<pid>/schedstat`, in nanoseconds,
   * else its `stat`, in 10 ms ticks), in microseconds; -1 elsewhere. Unlike `activeMs` it does not
   * count the time the busy thread waited for a core on a loaded machine.
   */
  mainCpuMicros: number
}

/** CPU time of this process's main thread in microseconds (Linux), or -1. */
export function mainThreadCpuMicros(): number {
  const task = `/proc/self/task/${process.pid}`
  try {
    // Its first field: nanoseconds spent running on a CPU.
    return Number(readFileSync(`${task}/schedstat`, 'utf8').split(' ')[0]) / 1000
  } catch {}
  try {
    const stat = readFileSync(`${task}/stat`, 'utf8')
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1_000_000) / CLOCK_TICKS
  } catch {
    return -1
  }
}
/** Linux's USER_HZ, the unit of `/proc` CPU times. */
const CLOCK_TICKS = 100

/** Answers the parent's `mark`, `read` and `stop` messages for a server child. */
export function serveUsage(stop: () => Promise<void>): void {
  let cpu = process.cpuUsage()
  let elu = performance.eventLoopUtilization()
  let main = mainThreadCpuMicros()
  process.on('message', async (message) => {
    if (message === 'mark') {
      cpu = process.cpuUsage()
      elu = performance.eventLoopUtilization()
      main = mainThreadCpuMicros()
      process.send?.('marked')
    } else if (message === 'read') {
      const used = process.cpuUsage(cpu)
      const busy = performance.eventLoopUtilization(elu)
      const mainNow = mainThreadCpuMicros()
      process.send?.({
        cpuMicros: used.user + used.system,
        activeMs: busy.active,
        mainCpuMicros: main < 0 || mainNow < 0 ? -1 : mainNow - main,
      } satisfies Usage)
    } else {
      await stop()
      process.exit(0)
    }
  })
}

/** A TCP port free right now on the loopback interface. */
export async function freePort(): Promise<number> {
  const probe = createServer()
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve))
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/**
 * Child: the service as deployed (see the module comment), on the scripted facilitator; without
 * the settlement ledger when `ledger` is false (telemetry still on); as an instance of the
 * cluster when `cluster` is true: telemetry and ledger on the machine's PostgreSQL (a schema of
 * its own, dropped at stop), guard and rate limits on its Redis.
 */
async function oursChild(facilitatorUrl: string, ledger: boolean, cluster: boolean): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-peer-'))
  const schema = cluster ? await createTestSchema('bench_peer') : undefined
  const { privateKey } = generateKeyPairSync('ed25519')
  const salt = 'bench-peer-salt-000000'
  const port = await freePort()
  const config = loadConfig({
    PORT: String(port),
    FACILITATOR_URL: facilitatorUrl,
    PAY_TO_EVM,
    PAY_TO_SOLANA,
    USDC_SOLANA,
    SOLANA_NETWORK: SOLANA,
    LOG_LEVEL: 'info',
    // The load generator is one client: its unpaid 402s must not meet the limit (the
    // configuration's maximum; 5 rounds of 3 s of 402s take about 100,000 points).
    RATE_LIMIT_POINTS: '1000000',
    TELEMETRY_SALT: salt,
    RECEIPT_SIGNING_KEY: privateKey.export({ format: 'pem', type: 'pkcs8' }).toString(),
    ...(cluster ? { REDIS_URL: CLUSTER_REDIS_URL } : {}),
  })
  logger.level = config.logLevel
  const telemetry = await createTelemetry({
    dataDir,
    salt,
    ...(schema ? { databaseUrl: schema.url } : {}),
  })
  const { ledger: _, ...withoutLedger } = telemetry
  const service = createService(config, { telemetry: ledger ? telemetry : withoutLedger })
  await service.runner.warm()
  const target = await listen(service.app.fetch, port)
  await service.link.ready()
  process.send?.({ url: target.url })
  serveUsage(async () => {
    await target.close()
    await service.close()
    await telemetry.close()
    await schema?.drop()
    rmSync(dataDir, { recursive: true, force: true })
  })
}

/**
 * Child: the peer, a minimal Hono app on the official `paymentMiddleware`, selling `POST /hash`
 * at the same price on the same rails, over the same facilitator. The handler reads the JSON
 * body, checks it with the tool's own Zod schema and runs the tool on the main thread.
 */
async function peerChild(facilitatorUrl: string): Promise<void> {
  logger.level = 'silent'
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitatorUrl }))
  for (const rail of RAILS) {
    server.register(rail.network, rail.id === 'evm' ? new ExactEvmServer() : new ExactSvmServer())
  }
  const app = new Hono()
  app.use(
    paymentMiddleware(
      {
        'POST /hash': {
          accepts: RAILS.map((rail) => ({
            scheme: 'exact',
            network: rail.network,
            payTo: rail.payTo,
            price: priceOn(rail, hashTool.price),
            maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
          })),
          description: hashTool.description,
          mimeType: 'application/json',
        },
      },
      server,
    ),
  )
  app.post('/hash', async (c) => {
    const input = hashTool.input.safeParse(await c.req.json().catch(() => undefined))
    if (!input.success) return c.json({ ok: false, code: 'invalid_request' }, 400)
    const nowSeconds = Math.floor(Date.now() / 1000)
    return c.json({ ok: true, result: hashTool.run(input.data, { nowSeconds: () => nowSeconds }) })
  })
  const target = await listen(app.fetch)
  process.send?.({ url: target.url })
  serveUsage(() => target.close())
}

// ---------------------------------------------------------------------------------------------
// The parent: payments, load, figures.

/** A child process spoken to over IPC, one question at a time. */
export interface Child {
  url: string
  ask<T>(message: string): Promise<T>
  /** Asks it to stop; resolves once it exited (at most 10 s). */
  stop(): Promise<void>
}

/**
 * Forks `module` (this file by default) as a child of the bench in `role`, and waits for the URL
 * it reports over IPC.
 */
export async function startChild(
  role: string,
  args: string[],
  execArgv: string[],
  module = fileURLToPath(import.meta.url),
): Promise<Child> {
  const child: ChildProcess = fork(module, [role, ...args], {
    execArgv,
    // The request log (stdout) goes to /dev/null.
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  })
  const { url } = await new Promise<{ url: string }>((resolve, reject) => {
    child.once('message', (m) => resolve(m as { url: string }))
    child.once('exit', (code) => reject(new Error(`${role} process exited with ${code}`)))
  })
  return {
    url,
    ask: <T>(message: string) =>
      new Promise<T>((resolve) => {
        child.once('message', (m) => resolve(m as T))
        child.send(message)
      }),
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null || !child.connected) return resolve()
        // Its CPU profile, if any, is written as it exits.
        const timer = setTimeout(resolve, 10_000)
        child.once('exit', () => {
          clearTimeout(timer)
          resolve()
        })
        child.send('stop')
      }),
  }
}

/** Signs fresh payments for one server's 402, alternately on Base and on Solana. */
interface Signer {
  /** `n` PAYMENT-SIGNATURE headers, each a new payment. */
  sign(n: number): Promise<string[]>
}

async function createSigner(required: PaymentRequired, rpcUrl: string): Promise<Signer> {
  const onRail =
    (prefix: string) =>
    (_version: number, offered: PaymentRequirements[]): PaymentRequirements => {
      const chosen = offered.find((r) => r.network.startsWith(prefix))
      if (!chosen) throw new Error(`the 402 offers no ${prefix} rail`)
      return chosen
    }
  const evm = new x402Client(onRail('eip155:'))
  evm.register('eip155:8453', new ExactEvmClient(privateKeyToAccount(generatePrivateKey())))
  const svm = new x402Client(onRail('solana:'))
  svm.register(SOLANA, new ExactSvmClient(await generateKeyPairSigner(), { rpcUrl }))
  return {
    async sign(n) {
      const headers: string[] = []
      for (let i = 0; i < n; i++) {
        const client = i % 2 === 0 ? evm : svm
        headers.push(encodePaymentSignatureHeader(await client.createPaymentPayload(required)))
      }
      return headers
    },
  }
}

/** The servers measured: ours, ours without the settlement ledger, the peer. */
type Server = 'ours' | 'ours-no-ledger' | 'peer'

/** One loaded endpoint of one server. */
interface Endpoint {
  server: Server
  child: Child
  /** 402: unpaid; 200: paid, with a fresh payment per request. */
  status: 200 | 402
  signer?: Signer
}

/** What one round of one endpoint measured. */
interface Sample {
  rps: number
  cpuPerRequestMicros: number
  activePerRequestMs: number
  /** Main-thread CPU per request (Linux), microseconds; negative when unknown. */
  mainCpuPerRequestMicros: number
  p50: number
  p99: number
  /** Answers other than the expected status, by `status code`. */
  others: Map<string, number>
  requests: number
  /** Payments signed for the round, and taken by requests. */
  signed: number
  taken: number
}

/** Loads an endpoint for `seconds` with the given payments (one per request). */
async function loadOnce(endpoint: Endpoint, seconds: number, payments: string[]) {
  let taken = 0
  let exhausted = false
  const others = new Map<string, number>()
  const paid = endpoint.status === 200
  const result = await autocannon({
    url: `${endpoint.child.url}/hash`,
    connections: CONNECTIONS,
    duration: seconds,
    requests: [
      {
        method: 'POST',
        body: BODY,
        headers: { 'content-type': 'application/json' },
        ...(paid
          ? {
              setupRequest: (request: autocannon.Request) => {
                const payment = payments[taken]
                if (payment === undefined) exhausted = true
                else taken++
                return {
                  ...request,
                  headers: {
                    ...request.headers,
                    'payment-signature': payment ?? (payments.at(-1) as string),
                  },
                }
              },
            }
          : {}),
        onResponse: (status: number, body: string) => {
          if (status === endpoint.status) return
          let code = ''
          try {
            const parsed = JSON.parse(body) as { code?: string; error?: string }
            code = parsed.code ?? parsed.error ?? ''
          } catch {
            code = 'not JSON'
          }
          const key = `${status} ${code}`.trim()
          others.set(key, (others.get(key) ?? 0) + 1)
        },
      },
    ],
  })
  return { result, taken, exhausted, others }
}

/** Requests per second a round may reach, from the last measured rate (for presigning). */
function expected(rps: number, seconds: number): number {
  return Math.ceil(rps * seconds * PRESIGN_MARGIN) + PRESIGN_EXTRA
}

/** One round of an endpoint: payments signed first, the round run again if they ran out. */
async function sample(endpoint: Endpoint, seconds: number, lastRps: number): Promise<Sample> {
  let want = expected(lastRps, seconds)
  for (;;) {
    const payments = endpoint.signer ? await endpoint.signer.sign(want) : []
    await endpoint.child.ask('mark')
    const { result, taken, exhausted, others } = await loadOnce(endpoint, seconds, payments)
    const usage = await endpoint.child.ask<Usage>('read')
    if (exhausted) {
      want *= 2
      continue
    }
    const requests = result.requests.total
    return {
      rps: result.requests.average,
      cpuPerRequestMicros: usage.cpuMicros / requests,
      activePerRequestMs: usage.activeMs / requests,
      mainCpuPerRequestMicros: usage.mainCpuMicros < 0 ? -1 : usage.mainCpuMicros / requests,
      p50: result.latency.p50,
      p99: result.latency.p99,
      others,
      requests,
      signed: payments.length,
      taken,
    }
  }
}

/** Options of {@link benchPeer}. */
export interface PeerBenchOptions {
  /** Interleaved rounds per endpoint (5 in the full bench). */
  rounds: number
  /** Seconds per round (3 in the full bench). */
  seconds: number
  /** Seconds of warm-up per endpoint before the rounds. */
  warmUpSeconds: number
  /** Directory for V8 CPU profiles of the two servers (`ours/`, `peer/`); none when absent. */
  profileDir?: string
  /** Load only the paid or only the unpaid endpoints (for a profile of one path). */
  only?: 'paid' | 'unpaid'
  /** Also measure ours without the settlement ledger, in the same rounds. */
  ledgerOff?: boolean
  /** Ours as an instance of the cluster: PostgreSQL telemetry and ledger, Redis guard and limits. */
  cluster?: boolean
}

const fmtMicros = (v: number) => (v >= 1000 ? `${(v / 1000).toFixed(2)} ms` : `${v.toFixed(0)} µs`)
const ratio = (v: number) => v.toFixed(2)

/**
 * The section: starts the facilitator, ours and the peer, warms each endpoint up, then runs
 * `rounds` interleaved rounds (ours and the peer in alternating order) and returns the figures as
 * Markdown: medians, ratios ours / peer per round (median and range), the targets of issue 18,
 * every non-expected answer by status and code, and the payment count.
 */
export async function benchPeer(options: PeerBenchOptions): Promise<string> {
  const facilitator = await startChild('--facilitator', [], process.execArgv)
  const argvOf = (server: Server) => [
    ...process.execArgv,
    ...(server === 'peer' ? [] : startNodeFlags()),
    ...(options.profileDir
      ? ['--cpu-prof', `--cpu-prof-dir=${join(options.profileDir, server)}`]
      : []),
  ]
  const children: Child[] = [facilitator]
  try {
    const mode = options.cluster ? ['cluster'] : []
    const ours = await startChild('--ours', [facilitator.url, 'ledger', ...mode], argvOf('ours'))
    children.push(ours)
    const servers: Partial<Record<Server, Child>> = { ours }
    if (options.ledgerOff) {
      const off = await startChild(
        '--ours',
        [facilitator.url, 'no-ledger', ...mode],
        argvOf('ours-no-ledger'),
      )
      children.push(off)
      servers['ours-no-ledger'] = off
    }
    const peer = await startChild('--peer', [facilitator.url], argvOf('peer'))
    children.push(peer)
    servers.peer = peer
    const rpcUrl = `${facilitator.url}/rpc`
    const requiredOf = async (child: Child) => {
      const res = await fetch(`${child.url}/hash`, {
        method: 'POST',
        body: BODY,
        headers: { 'content-type': 'application/json' },
      })
      await res.arrayBuffer()
      return decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '')
    }
    const endpoints: Endpoint[] = []
    for (const [name, child] of Object.entries(servers) as [Server, Child][]) {
      const signer = await createSigner(await requiredOf(child), rpcUrl)
      // One paid call first: the payments must be accepted (matching requirements, echoes).
      const [payment] = await signer.sign(1)
      const res = await fetch(`${child.url}/hash`, {
        method: 'POST',
        body: BODY,
        headers: { 'content-type': 'application/json', 'payment-signature': payment as string },
      })
      const text = await res.text()
      if (res.status !== 200) throw new Error(`${name}: a signed payment got ${res.status} ${text}`)
      decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')
      if (options.only !== 'paid') endpoints.push({ server: name, child, status: 402 })
      if (options.only !== 'unpaid') endpoints.push({ server: name, child, status: 200, signer })
    }

    // A first guess of the paid rate; each round then presigns from the last one measured.
    const lastRps = new Map<Endpoint, number>(
      endpoints.map((e) => [e, e.status === 200 ? FIRST_GUESS_RPS : 0]),
    )
    if (options.warmUpSeconds > 0) {
      for (const endpoint of endpoints) {
        const warm = await sample(endpoint, options.warmUpSeconds, lastRps.get(endpoint) ?? 0)
        lastRps.set(endpoint, warm.rps)
      }
    }
    const samples = new Map<Endpoint, Sample[]>(endpoints.map((e) => [e, []]))
    for (let round = 0; round < options.rounds; round++) {
      // Each server first in turn: ours in round 0, the next in round 1, and so on.
      const count = Object.keys(servers).length
      const shift = (endpoints.length / count) * (round % count)
      const order = [...endpoints.slice(shift), ...endpoints.slice(0, shift)]
      for (const endpoint of order) {
        const s = await sample(endpoint, options.seconds, lastRps.get(endpoint) ?? 0)
        lastRps.set(endpoint, s.rps)
        samples.get(endpoint)?.push(s)
      }
    }
    const settled = await facilitator.ask<Record<string, number>>('settled')
    return report(options, endpoints, samples, settled)
  } finally {
    for (const child of children.reverse()) child.stop()
  }
}

function report(
  options: PeerBenchOptions,
  endpoints: Endpoint[],
  samples: Map<Endpoint, Sample[]>,
  settled: Record<string, number>,
): string {
  const find = (server: Server, status: 200 | 402) =>
    samples.get(endpoints.find((e) => e.server === server && e.status === status) as Endpoint) ?? []
  const rows: (string | number)[][] = []
  const ratios = new Map<string, number>()
  const line = (
    label: string,
    status: 200 | 402,
    of: (s: Sample) => number,
    format: (v: number) => string,
  ) => {
    const ours = find('ours', status)
    const peer = find('peer', status)
    if (ours.length === 0) return
    const perRound = roundRatios(ours.map(of), peer.map(of))
    if (perRound.median !== undefined) ratios.set(label, perRound.median)
    rows.push([label, format(median(ours.map(of))), format(median(peer.map(of))), perRound.cell])
  }
  const rps = (v: number) => Math.round(v).toLocaleString('en-US')
  const ms = (v: number) => `${v} ms`
  line('unpaid 402, req/s', 402, (s) => s.rps, rps)
  line('unpaid 402, server CPU per request', 402, (s) => s.cpuPerRequestMicros, fmtMicros)
  if (find('ours', 402).every((s) => s.mainCpuPerRequestMicros >= 0)) {
    line(
      'unpaid 402, main-thread CPU per request',
      402,
      (s) => s.mainCpuPerRequestMicros,
      fmtMicros,
    )
  }
  line('unpaid 402, latency p50', 402, (s) => s.p50, ms)
  line('unpaid 402, latency p99', 402, (s) => s.p99, ms)
  line('paid 200, req/s', 200, (s) => s.rps, rps)
  line('paid 200, server CPU per request', 200, (s) => s.cpuPerRequestMicros, fmtMicros)
  line('paid 200, main-thread time per request', 200, (s) => s.activePerRequestMs * 1000, fmtMicros)
  if (find('ours', 200).every((s) => s.mainCpuPerRequestMicros >= 0)) {
    line('paid 200, main-thread CPU per request', 200, (s) => s.mainCpuPerRequestMicros, fmtMicros)
  }
  line('paid 200, latency p50', 200, (s) => s.p50, ms)
  line('paid 200, latency p99', 200, (s) => s.p99, ms)

  const oursMainMs = median(find('ours', 200).map((s) => s.activePerRequestMs))
  const verdict = (ok: boolean) => (ok ? 'met' : '**MISSED**')
  const paidRps = ratios.get('paid 200, req/s') ?? 0
  const paidCpu = ratios.get('paid 200, server CPU per request') ?? 0
  const unpaidRps = ratios.get('unpaid 402, req/s') ?? 0
  const others = (server: Server, status: 200 | 402) => {
    const all = new Map<string, number>()
    let requests = 0
    for (const s of find(server, status)) {
      requests += s.requests
      for (const [k, n] of s.others) all.set(k, (all.get(k) ?? 0) + n)
    }
    const list = [...all].map(([k, n]) => `${n} × ${k}`).join(', ')
    return `${list || 'none'} of ${requests.toLocaleString('en-US')}`
  }
  const paymentCount = (server: Server) => {
    const list = find(server, 200)
    const signed = list.reduce((n, s) => n + s.signed, 0)
    const taken = list.reduce((n, s) => n + s.taken, 0)
    return `${signed.toLocaleString('en-US')} signed, ${taken.toLocaleString('en-US')} sent`
  }
  const settledBy = (server: Server) => {
    const url = endpoints.find((e) => e.server === server)?.child.url ?? ''
    return (settled[new URL(url).origin] ?? 0).toLocaleString('en-US')
  }
  return [
    `autocannon: ${CONNECTIONS} connections, \`POST /hash\` with \`${BODY}\`, ${options.warmUpSeconds} s ` +
      `warm-up per endpoint, then ${options.rounds} interleaved rounds of ${options.seconds} s. Each ` +
      'server in its own child process over the same scripted facilitator (HTTP, instant verify ' +
      'and settle). Ours as deployed (rate limiter on, request log at info, ' +
      (options.cluster
        ? 'telemetry and ledger on PostgreSQL, guard and rate limits on Redis, '
        : 'telemetry on SQLite, ') +
      'receipts signed); the peer is the official `@x402/hono` `paymentMiddleware`. Every paid ' +
      "request carries a fresh payment signed by the official client from that server's own 402, " +
      'Base and Solana alternately. "server CPU" is the child process\'s CPU time (every thread) ' +
      'per request; "main-thread time" is its event-loop utilization × wall time per request, ' +
      '"main-thread CPU" the time its main thread ran on a core (Linux `schedstat`).',
    '',
    table(['medians', 'ours', 'peer', 'ours / peer (median of the rounds, and their range)'], rows),
    '',
    `Targets (issue 18): paid req/s ≥ 0.8 × the peer's: ${ratio(paidRps)}, ${verdict(paidRps >= 0.8)}; ` +
      `server CPU per paid call ≤ 1.5 × the peer's: ${ratio(paidCpu)}, ${verdict(paidCpu <= 1.5)}; ` +
      `main-thread time per paid call < 1 ms: ${fmtMicros(oursMainMs * 1000)}, ${verdict(oursMainMs < 1)}; ` +
      `unpaid 402 req/s ≥ 1.0 × the peer's: ${ratio(unpaidRps)}, ${verdict(unpaidRps >= 1)}.`,
    '',
    `Answers other than expected, over the rounds: ours paid ${others('ours', 200)}; peer paid ` +
      `${others('peer', 200)}; ours unpaid ${others('ours', 402)}; peer unpaid ${others('peer', 402)}.`,
    `Payments: ours ${paymentCount('ours')}, peer ${paymentCount('peer')} (signed before each ` +
      'round; a built request that the round did not send is never answered). Settled at the ' +
      `facilitator, warm-up included: ours ${settledBy('ours')}, peer ${settledBy('peer')}.`,
    ...(options.ledgerOff ? ['', ledgerOffTable(find, others)] : []),
  ].join('\n')
}

/**
 * The same three ratios for ours with and without the settlement ledger, against the peer of the
 * same rounds, and ours with the ledger against ours without it.
 */
function ledgerOffTable(
  find: (server: Server, status: 200 | 402) => Sample[],
  others: (server: Server, status: 200 | 402) => string,
): string {
  const rows: string[][] = []
  const line = (label: string, status: 200 | 402, of: (s: Sample) => number) => {
    const [on, off, peer] = (['ours', 'ours-no-ledger', 'peer'] as const).map((server) =>
      find(server, status).map(of),
    ) as [number[], number[], number[]]
    if (on.length === 0) return
    rows.push([
      label,
      roundRatios(on, peer).cell,
      roundRatios(off, peer).cell,
      roundRatios(on, off).cell,
    ])
  }
  line('paid 200, req/s', 200, (s) => s.rps)
  line('paid 200, server CPU per request', 200, (s) => s.cpuPerRequestMicros)
  line('unpaid 402, req/s', 402, (s) => s.rps)
  line('unpaid 402, server CPU per request', 402, (s) => s.cpuPerRequestMicros)
  if (find('ours', 402).every((s) => s.mainCpuPerRequestMicros >= 0)) {
    line('unpaid 402, main-thread CPU per request', 402, (s) => s.mainCpuPerRequestMicros)
  }
  return [
    "The settlement ledger's cost: ours with it (as deployed) and without it, in the same rounds.",
    '',
    table(
      [
        'ratio (median of the rounds, and their range)',
        'ledger on / peer',
        'ledger off / peer',
        'on / off',
      ],
      rows,
    ),
    '',
    `Answers other than expected without the ledger: paid ${others('ours-no-ledger', 200)}; ` +
      `unpaid ${others('ours-no-ledger', 402)}.`,
  ].join('\n')
}

const arg = (flag: string): string | undefined => {
  const at = process.argv.indexOf(flag)
  return at >= 0 ? process.argv[at + 1] : undefined
}

if (process.argv.includes('--facilitator')) {
  await facilitatorChild()
} else if (process.argv.includes('--ours')) {
  const at = process.argv.indexOf('--ours')
  await oursChild(
    process.argv[at + 1] as string,
    process.argv[at + 2] !== 'no-ledger',
    process.argv[at + 3] === 'cluster',
  )
} else if (process.argv.includes('--peer')) {
  await peerChild(process.argv[process.argv.indexOf('--peer') + 1] as string)
} else if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const profileDir = arg('--profile')
  const only = arg('--only')
  process.stdout.write(
    `${await benchPeer({
      rounds: Number(arg('--rounds') ?? 5),
      seconds: Number(arg('--seconds') ?? 3),
      warmUpSeconds: Number(arg('--warm-up') ?? 2),
      ...(profileDir ? { profileDir } : {}),
      ...(only === 'paid' || only === 'unpaid' ? { only } : {}),
      ...(process.argv.includes('--ledger-off') ? { ledgerOff: true } : {}),
      ...(process.argv.includes('--cluster') ? { cluster: true } : {}),
    })}\n`,
  )
  process.exit(0)
}
