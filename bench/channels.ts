/**
 * Prepaid channels against the peer (issue 38): the service as deployed and a minimal Hono app on
 * the official `@x402/hono` `paymentMiddleware`, both offering `exact` and `batch-settlement` on
 * Base for `POST /hash`, on the devnet (anvil with our escrow, the official facilitator with both
 * schemes), anvil mining a block every 2 s as Base does once the channels are open.
 *
 * - Two server children (ours: `createService` with telemetry on SQLite, the rate limiter on, the
 *   channels in a file store; the peer: the SDK's server schemes with an in-memory channel store);
 *   the devnet and every client in this process, so that the servers' CPU time is theirs alone.
 * - Clients: the official `@x402/fetch` with only the `exact` client scheme (one payer per
 *   server, sequential: its latency), and with only the `batch-settlement` client scheme (one
 *   payer per connection and server, each on its own channel, opened before the clock starts).
 * - Figures: the median latency of a paid call (exact; voucher), voucher calls per second with
 *   `CONNECTIONS` payers at once, and server CPU per call (every thread of the child).
 *
 * `npx tsx bench/channels.ts [--rounds N] [--seconds S] [--exact N] [--profile DIR] [--redis URL]`
 * runs this section alone; `--profile` writes V8 CPU profiles of both servers into DIR/ours and
 * DIR/peer; `--redis` runs ours on Redis (its channel store, guard and rate limits).
 */
import { fileURLToPath } from 'node:url'
import { x402Client } from '@x402/core/client'
import { HTTPFacilitatorClient } from '@x402/core/server'
import { toClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme as BatchClient } from '@x402/evm/batch-settlement/client'
import { BatchSettlementEvmScheme as BatchServer } from '@x402/evm/batch-settlement/server'
import { ExactEvmScheme as ExactClient } from '@x402/evm/exact/client'
import { ExactEvmScheme as ExactServer } from '@x402/evm/exact/server'
import { wrapFetchWithPayment } from '@x402/fetch'
import { paymentMiddleware, x402ResourceServer } from '@x402/hono'
import { Hono } from 'hono'
import { createPublicClient, type Hex, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { loadConfig } from '../src/config.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { MAX_TIMEOUT_SECONDS } from '../src/facilitators/link.js'
import { logger } from '../src/logger.js'
import { createService } from '../src/service.js'
import { createTelemetry } from '../src/telemetry/index.js'
import { hashTool } from '../src/tools/hash.js'
import { listen } from './http.js'
import { median, table } from './measure.js'
import { type Child, freePort, serveUsage, startChild, type Usage } from './peer.js'

/** Voucher payers calling each server at once, one channel each. */
const CONNECTIONS = 8
const BODY = JSON.stringify({ input: 'abc' })
const WITHDRAW_DELAY_S = 900
const HERE = fileURLToPath(import.meta.url)

/** What a server child is started with (JSON on its command line). */
interface ServerArgs {
  facilitatorUrl: string
  rpcUrl: string
  payTo: string
  usdc: string
  domain: { name: string; version: string }
  /** REDIS_URL of ours (channels in Redis instead of files), if any. */
  redisUrl?: string
}

/** Child: the service as deployed, with its channels on (EVM_RPC_URL checks the escrow). */
async function oursChild(args: ServerArgs): Promise<void> {
  const { mkdtempSync, rmSync } = await import('node:fs')
  const { tmpdir } = await import('node:os')
  const { join } = await import('node:path')
  const dataDir = mkdtempSync(join(tmpdir(), 'bench-channels-'))
  const port = await freePort()
  const salt = 'bench-channels-salt-0000'
  const config = loadConfig({
    PORT: String(port),
    FACILITATOR_URL: args.facilitatorUrl,
    EVM_RPC_URL: args.rpcUrl,
    PAY_TO_EVM: args.payTo,
    X402_DEVNET: 'on',
    LOG_LEVEL: 'info',
    RATE_LIMIT_POINTS: '1000000',
    TELEMETRY_SALT: salt,
    BATCH_SETTLEMENT_WITHDRAW_DELAY_S: String(WITHDRAW_DELAY_S),
    // Claims are not what is measured: the manager waits for the whole run.
    BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
    BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
    ...(args.redisUrl ? { REDIS_URL: args.redisUrl } : {}),
  })
  logger.level = config.logLevel
  const telemetry = await createTelemetry({ dataDir, salt })
  const service = createService(config, { telemetry, dataDir })
  await service.runner.warm()
  const target = await listen(service.app.fetch, port)
  await service.channels?.start()
  await service.link.ready()
  process.send?.({ url: target.url })
  serveUsage(async () => {
    await target.close()
    await service.close()
    await telemetry.close()
    rmSync(dataDir, { recursive: true, force: true })
  })
}

/**
 * Child: the peer, the official middleware offering both schemes on Base over the devnet
 * facilitator, with the SDK's batch-settlement server scheme (its own receiver-authorizer key, an
 * in-memory channel store) and the hash tool run on the main thread.
 */
async function peerChild(args: ServerArgs): Promise<void> {
  logger.level = 'silent'
  const network = 'eip155:8453'
  const server = new x402ResourceServer(new HTTPFacilitatorClient({ url: args.facilitatorUrl }))
  server.register(network, new ExactServer())
  server.register(
    network,
    new BatchServer(args.payTo as Hex, {
      receiverAuthorizerSigner: privateKeyToAccount(generatePrivateKey()),
      withdrawDelay: WITHDRAW_DELAY_S,
    }),
  )
  const price = { amount: hashTool.price, asset: args.usdc, extra: { ...args.domain } }
  const app = new Hono()
  app.use(
    paymentMiddleware(
      {
        'POST /hash': {
          accepts: ['exact', 'batch-settlement'].map((scheme) => ({
            scheme,
            network,
            payTo: args.payTo,
            price:
              scheme === 'exact'
                ? price
                : { ...price, extra: { ...price.extra, minDeposit: '1000000' } },
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

/** A paying fetch of the official client with one scheme registered, for one funded payer. */
function payingFetch(stack: DevStack<'evm'>, privateKey: Hex, scheme: 'exact' | 'voucher') {
  const account = privateKeyToAccount(privateKey)
  const client = new x402Client()
  if (scheme === 'exact') client.register(stack.evm.network, new ExactClient(account))
  else {
    const reader = createPublicClient({ transport: http(stack.evm.rpcUrl) })
    client.register(stack.evm.network, new BatchClient(toClientEvmSigner(account, reader)))
  }
  return wrapFetchWithPayment(fetch, client)
}

/** One paid `POST /hash`; throws unless it is a 200. Returns its latency in milliseconds. */
async function call(pay: typeof fetch, url: string): Promise<number> {
  const started = performance.now()
  const res = await pay(`${url}/hash`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: BODY,
  })
  const text = await res.text()
  if (res.status !== 200) throw new Error(`a paid call got ${res.status}: ${text.slice(0, 300)}`)
  return performance.now() - started
}

/** What one server measured in a phase. */
interface Phase {
  latencies: number[]
  calls: number
  seconds: number
  cpuPerCallMicros: number
}

/** `CONNECTIONS` voucher payers calling one server for `seconds`, each call after the last. */
async function voucherPhase(
  child: Child,
  payers: (typeof fetch)[],
  seconds: number,
): Promise<Phase> {
  await child.ask('mark')
  const latencies: number[] = []
  const started = performance.now()
  const deadline = started + seconds * 1000
  await Promise.all(
    payers.map(async (pay) => {
      while (performance.now() < deadline) latencies.push(await call(pay, child.url))
    }),
  )
  const elapsed = (performance.now() - started) / 1000
  const usage = await child.ask<Usage>('read')
  return {
    latencies,
    calls: latencies.length,
    seconds: elapsed,
    cpuPerCallMicros: usage.cpuMicros / latencies.length,
  }
}

/** `n` sequential `exact` calls to one server (each waits for its block). */
async function exactPhase(child: Child, pay: typeof fetch, n: number): Promise<Phase> {
  await child.ask('mark')
  const latencies: number[] = []
  const started = performance.now()
  for (let i = 0; i < n; i++) latencies.push(await call(pay, child.url))
  const usage = await child.ask<Usage>('read')
  return {
    latencies,
    calls: n,
    seconds: (performance.now() - started) / 1000,
    cpuPerCallMicros: usage.cpuMicros / n,
  }
}

/** Options of {@link benchChannels}. */
export interface ChannelsBenchOptions {
  /** Interleaved voucher rounds per server. */
  rounds: number
  /** Seconds per voucher round. */
  seconds: number
  /** Sequential `exact` calls per server (each about a block). */
  exactCalls: number
  /** Directory for V8 CPU profiles of the two servers (`ours/`, `peer/`); none when absent. */
  profileDir?: string
  /** REDIS_URL for ours: its channels, guard and rate limits in Redis; default files and memory. */
  redisUrl?: string
}

/** Anvil's JSON-RPC, for its mining controls. */
async function anvil(rpcUrl: string, method: string, params: unknown[]): Promise<void> {
  const res = await fetch(rpcUrl, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  })
  const body = (await res.json()) as { error?: { message: string } }
  if (body.error) throw new Error(`${method}: ${body.error.message}`)
}

/**
 * The section: the devnet with the escrow, ours and the peer, every voucher payer's channel opened
 * (one deposit each, mined at once), then anvil mining every 2 s; `exactCalls` sequential `exact`
 * calls per server, then `rounds` interleaved voucher rounds. Returns the figures as Markdown,
 * with the targets of issue 38.
 */
export async function benchChannels(options: ChannelsBenchOptions): Promise<string> {
  const stack = await startDevStack({ rails: ['evm'], payers: 2 * CONNECTIONS + 2 })
  const children: Child[] = []
  try {
    const args: ServerArgs = {
      facilitatorUrl: stack.facilitatorUrl,
      rpcUrl: stack.evm.rpcUrl,
      payTo: stack.evm.payTo,
      usdc: stack.evm.usdcAddress,
      domain: stack.evm.usdcDomain,
      ...(options.redisUrl ? { redisUrl: options.redisUrl } : {}),
    }
    const start = (role: string, name: string) =>
      startChild(
        role,
        [JSON.stringify(args)],
        options.profileDir
          ? [...process.execArgv, '--cpu-prof', `--cpu-prof-dir=${options.profileDir}/${name}`]
          : process.execArgv,
        HERE,
      )
    const servers = {
      ours: await start('--channels-ours', 'ours'),
      peer: await start('--channels-peer', 'peer'),
    }
    children.push(servers.ours, servers.peer)
    const keys = stack.evm.payers.map((p) => p.privateKey)
    const vouchers = {
      ours: keys.slice(0, CONNECTIONS).map((k) => payingFetch(stack, k, 'voucher')),
      peer: keys.slice(CONNECTIONS, 2 * CONNECTIONS).map((k) => payingFetch(stack, k, 'voucher')),
    }
    const exact = {
      ours: payingFetch(stack, keys[2 * CONNECTIONS] as Hex, 'exact'),
      peer: payingFetch(stack, keys[2 * CONNECTIONS + 1] as Hex, 'exact'),
    }
    // Channels opened (a deposit each) and every path warm while blocks are mined at once.
    for (const name of ['ours', 'peer'] as const) {
      await Promise.all(vouchers[name].map((pay) => call(pay, servers[name].url)))
      await Promise.all(vouchers[name].map((pay) => call(pay, servers[name].url)))
      await call(exact[name], servers[name].url)
    }
    await anvil(stack.evm.rpcUrl, 'evm_setAutomine', [false])
    await anvil(stack.evm.rpcUrl, 'evm_setIntervalMining', [2])

    const exactPhases = {
      peer: await exactPhase(servers.peer, exact.peer, options.exactCalls),
      ours: await exactPhase(servers.ours, exact.ours, options.exactCalls),
    }
    const rounds = { ours: [] as Phase[], peer: [] as Phase[] }
    for (let round = 0; round < options.rounds; round++) {
      const order = round % 2 === 0 ? (['ours', 'peer'] as const) : (['peer', 'ours'] as const)
      for (const name of order) {
        rounds[name].push(await voucherPhase(servers[name], vouchers[name], options.seconds))
      }
    }
    return report(options, exactPhases, rounds)
  } finally {
    await Promise.all(children.map((child) => child.stop()))
    await stack.stop()
  }
}

function report(
  options: ChannelsBenchOptions,
  exact: { ours: Phase; peer: Phase },
  rounds: { ours: Phase[]; peer: Phase[] },
): string {
  const ms = (v: number) => `${v.toFixed(1)} ms`
  const cpu = (v: number) => `${(v / 1000).toFixed(2)} ms`
  const rps = (p: Phase[]) => median(p.map((r) => r.calls / r.seconds))
  const lat = (p: Phase[]) => median(p.flatMap((r) => r.latencies))
  const cpuOf = (p: Phase[]) => median(p.map((r) => r.cpuPerCallMicros))
  const rows: (string | number)[][] = [
    [
      'exact: latency p50 (sequential)',
      ms(median(exact.ours.latencies)),
      ms(median(exact.peer.latencies)),
    ],
    [
      'exact: server CPU per call',
      cpu(exact.ours.cpuPerCallMicros),
      cpu(exact.peer.cpuPerCallMicros),
    ],
    ['voucher: latency p50', ms(lat(rounds.ours)), ms(lat(rounds.peer))],
    ['voucher: calls per second', rps(rounds.ours).toFixed(0), rps(rounds.peer).toFixed(0)],
    ['voucher: server CPU per call', cpu(cpuOf(rounds.ours)), cpu(cpuOf(rounds.peer))],
  ]
  const latencyRatio = lat(rounds.ours) / median(exact.peer.latencies)
  const rateRatio = rps(rounds.ours) / rps(rounds.peer)
  const verdict = (ok: boolean) => (ok ? 'met' : '**MISSED**')
  return [
    `The devnet (anvil with our escrow, the official facilitator with \`exact\` and \`batch-settlement\`), anvil mining a block every 2 s once the channels are open. ${options.exactCalls} sequential \`exact\` calls per server with the official client; then ${options.rounds} interleaved rounds of ${options.seconds} s of voucher calls by ${CONNECTIONS} payers at once per server, each on its own channel (one deposit, opened before the clock). Each server in its own child process; "server CPU" is the child's CPU time (every thread) per call. Ours as deployed (telemetry on SQLite, rate limiter on, channels in a file store); the peer is the official \`@x402/hono\` \`paymentMiddleware\` with the SDK's server schemes.`,
    '',
    table(['medians', 'ours', 'peer (official middleware)'], rows),
    '',
    `Targets (issue 38): a voucher call's median latency ≤ a tenth of an \`exact\` call's to the official middleware: ${latencyRatio.toFixed(3)}, ${verdict(latencyRatio <= 0.1)}; voucher calls per second ≥ 0.8 × the middleware's own on \`batch-settlement\`: ${rateRatio.toFixed(2)}, ${verdict(rateRatio >= 0.8)}.`,
  ].join('\n')
}

const arg = (flag: string): string | undefined => {
  const at = process.argv.indexOf(flag)
  return at >= 0 ? process.argv[at + 1] : undefined
}

if (process.argv.includes('--channels-ours')) {
  await oursChild(JSON.parse(arg('--channels-ours') as string) as ServerArgs)
} else if (process.argv.includes('--channels-peer')) {
  await peerChild(JSON.parse(arg('--channels-peer') as string) as ServerArgs)
} else if (process.argv[1] === HERE) {
  logger.level = 'silent'
  process.stdout.write(
    `${await benchChannels({
      rounds: Number(arg('--rounds') ?? 3),
      seconds: Number(arg('--seconds') ?? 5),
      exactCalls: Number(arg('--exact') ?? 5),
      ...(arg('--profile') ? { profileDir: arg('--profile') as string } : {}),
      ...(arg('--redis') ? { redisUrl: arg('--redis') as string } : {}),
    })}\n`,
  )
  process.exit(0)
}
