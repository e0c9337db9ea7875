import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startCommand } from '../src/devnet/child.js'
import { freePort } from '../src/devnet/ports.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import {
  buildComposeStandIns,
  buildImage,
  CHECKOUT_TAG,
  imageSize,
  PODMAN_LIMITS,
  podman,
  podmanOk,
  podmanUnavailable,
  standInBase,
} from './helpers/podman.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'

// The Dockerfile, built and run for real with podman: the image is built on a local stand-in for
// node:24-bookworm-slim (scripts/container-base.sh, cached in podman's image store), then run on
// the host network against the devnet's facilitator and chains, paid on both rails with the
// official client, health-checked with its own HEALTHCHECK, and stopped with SIGTERM in the middle
// of a paid call.

const unavailable = podmanUnavailable()
if (unavailable) console.warn(`test/container.system.test.ts skipped: ${unavailable}`)

const IMAGE = `localhost/payload-tools:${CHECKOUT_TAG}`
const NAME = `payload-tools-e2e-${process.pid}`
const FAIL_CLOSED_NAME = `${NAME}-no-facilitator`
/** Service budget for a drain (the default, as an operator would run it). */
const SHUTDOWN_TIMEOUT_MS = 15_000
/** Packages of the dev tooling that must not be in the image. */
const DEV_ONLY = [
  '@biomejs',
  '@foundry-rs',
  '@offchainlabs',
  '@openzeppelin',
  '@redocly',
  'autocannon',
  'esbuild',
  'fast-check',
  'litesvm',
  'payload-tools-mcp',
  'playwright-core',
  'solc',
  'tsx',
  'typescript',
  'vitest',
]

let stack: DevStack
let proxy: FacilitatorProxy
let port: number
let base: string
let baseImage: string
const figures: string[] = []

beforeAll(async () => {
  if (unavailable) return
  const started = performance.now()
  const seconds = (from: number) => ((performance.now() - from) / 1000).toFixed(1)
  // The chains start while the image builds.
  const stackReady = startDevStack({ payers: 2 })
  try {
    let from = performance.now()
    baseImage = await standInBase()
    figures.push(`stand-in base ${baseImage}: ${seconds(from)} s`)
    from = performance.now()
    await buildImage(baseImage, IMAGE)
    figures.push(`image build: ${seconds(from)} s`)
    const [size, baseSize] = await Promise.all([imageSize(IMAGE), imageSize(baseImage)])
    figures.push(`image adds ${((size - baseSize) / 1e6).toFixed(1)} MB to its base`)
  } finally {
    stack = await stackReady
  }
  proxy = await facilitatorProxy(stack.facilitatorUrl)
  port = await freePort()
  base = `http://127.0.0.1:${port}`
  await startContainer(NAME, {
    ...stack.serviceEnv,
    FACILITATOR_URL: proxy.url,
    PORT: String(port),
    PUBLIC_BASE_URL: base,
    TOOL_WORKERS: '1',
    SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS),
    // A drain must leave time for one settlement: 8 s of it, the settlement ledger's two writes,
    // the telemetry write and the reply.
    FACILITATOR_SETTLE_TIMEOUT_MS: '8000',
  })
  await waitFor(async () => {
    const res = await fetch(`${base}/health`).catch(() => undefined)
    return res?.status === 200 && (await json(res)).checks.facilitator.status === 'ok'
  }, `${NAME} ready`)
  figures.push(`build and start, all in: ${seconds(started)} s`)
}, 45 * 60_000)

afterAll(async () => {
  if (unavailable) return
  console.log(`container test:\n  ${figures.join('\n  ')}`)
  // -v: the anonymous /app/data volumes go with them.
  await podman(['rm', '--force', '--volumes', NAME, FAIL_CLOSED_NAME])
  await proxy?.close()
  await stack?.stop()
}, 120_000)

/**
 * `podman run -d` of the image on the host network. No systemd here to run the HEALTHCHECK on a
 * timer (`--health-interval disable`); `podman healthcheck run` runs it on demand.
 */
async function startContainer(name: string, env: Record<string, string>): Promise<void> {
  const envArgs = Object.entries(env).flatMap(([key, value]) => ['--env', `${key}=${value}`])
  await podmanOk([
    'run',
    '--detach',
    '--name',
    name,
    '--network',
    'host',
    '--health-interval',
    'disable',
    ...PODMAN_LIMITS,
    ...envArgs,
    IMAGE,
  ])
}

async function waitFor(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 60_000
  while (Date.now() < deadline) {
    if (await check()) return
    await sleep(200)
  }
  const logs = await podman(['logs', NAME])
  throw new Error(`timed out waiting for ${what}\n${logs.stdout.slice(-3000)}${logs.stderr}`)
}

/** The container's log lines (its stdout), each parsed as JSON: the test fails on any other line. */
async function logLines(name: string): Promise<Array<Record<string, unknown>>> {
  const { stdout, stderr } = await podman(['logs', name])
  expect(stderr).toBe('')
  return stdout
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}

/**
 * A pass-through to the devnet facilitator that can hold the next `/settle`: the test then knows
 * a paid call is in flight, settling, when it signals the container.
 */
interface FacilitatorProxy {
  url: string
  port: number
  /** Holds the next /settle; `arrived` resolves when it comes, `release` lets it through. */
  holdNextSettle(): { arrived: Promise<void>; release: () => void }
  close(): Promise<void>
}

/**
 * Listens on every interface: containers on the host network reach it on 127.0.0.1, those on a
 * compose network through host.containers.internal.
 */
async function facilitatorProxy(target: string): Promise<FacilitatorProxy> {
  let hold: { arrive: () => void; released: Promise<void> } | undefined
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    if (req.url === '/settle' && hold) {
      const held = hold
      hold = undefined
      held.arrive()
      await held.released
    }
    const upstream = await fetch(`${target}${req.url}`, {
      method: req.method ?? 'GET',
      headers: { 'content-type': req.headers['content-type'] ?? 'application/json' },
      ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
    })
    res.writeHead(upstream.status, {
      'content-type': upstream.headers.get('content-type') ?? 'application/json',
    })
    res.end(Buffer.from(await upstream.arrayBuffer()))
  })
  await new Promise<void>((resolve) => server.listen(0, '0.0.0.0', resolve))
  const port = (server.address() as AddressInfo).port
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    holdNextSettle() {
      let arrive = () => {}
      let release = () => {}
      const arrived = new Promise<void>((resolve) => (arrive = resolve))
      const released = new Promise<void>((resolve) => (release = resolve))
      hold = { arrive, released }
      return { arrived, release }
    },
    async close() {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    },
  }
}

/** The hash tool's answer for `input`, computed here. */
function hashResult(input: string) {
  const digest = createHash('sha256').update(input).digest()
  return {
    algorithm: 'SHA-256',
    hex: digest.toString('hex'),
    base64: digest.toString('base64'),
    input_bytes: Buffer.byteLength(input),
  }
}

/** One paid `/hash` on `rail` with the official client; asserts the 200 and the exact charge. */
async function paidHash(rail: Rail, payer: number, input: string, url = base): Promise<void> {
  const before = await payToBalance(stack, rail)
  const pay = await paidFetch(payerKeys(stack, rail, payer), rail)
  const res = await pay(`${url}/hash`, { method: 'POST', body: JSON.stringify({ input }) })
  expect(res.status).toBe(200)
  expect(await json(res)).toEqual({ ok: true, result: hashResult(input) })
  const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
  expect(receipt.success).toBe(true)
  expect(receipt.network).toBe(rail === 'evm' ? 'eip155:8453' : stack.solana.network)
  expect((await payToBalance(stack, rail)) - before).toBe(1000n)
}

describe.skipIf(unavailable)('the container image (podman)', () => {
  it('declares user node, SIGTERM, port 8402, the /app/data volume and the /health HEALTHCHECK', async () => {
    // Podman shows the HEALTHCHECK beside Config (Docker shows it in Config).
    const [image] = JSON.parse(await podmanOk(['image', 'inspect', IMAGE])) as [
      { Config: Record<string, unknown>; Healthcheck: unknown },
    ]
    expect(image.Config).toMatchObject({
      User: 'node',
      WorkingDir: '/app',
      StopSignal: 'SIGTERM',
      ExposedPorts: { '8402/tcp': {} },
      Volumes: { '/app/data': {} },
      // The image runs the service as `npm start` does, Node flags included.
      Entrypoint: startCommand(),
    })
    expect(image.Config.Env).toContain('HOST=0.0.0.0')
    expect(image.Healthcheck).toEqual({
      Test: ['CMD', 'node', 'dist/healthcheck.js'],
      Interval: 15e9,
      Timeout: 5e9,
      StartPeriod: 30e9,
      Retries: 3,
    })
  })

  it('holds production dependencies and dist/ only: no devnet, chains, browser or bench', async () => {
    const listing = await podmanOk([
      'run',
      '--rm',
      ...PODMAN_LIMITS,
      '--entrypoint',
      'node',
      IMAGE,
      '-e',
      `const fs = require('node:fs')
       const top = fs.readdirSync('node_modules')
       const names = top.flatMap((n) => n.startsWith('@') ? [n, ...fs.readdirSync('node_modules/' + n).map((m) => n + '/' + m)] : [n])
       console.log(JSON.stringify({ app: fs.readdirSync('.').sort(), src: fs.readdirSync('src', { recursive: true }).sort(),
         dist: fs.readdirSync('dist').sort(), names, uid: process.getuid() }))`,
    ])
    const { app, src, dist, names, uid } = JSON.parse(listing)
    expect(app).toEqual(['data', 'dist', 'node_modules', 'package.json', 'src'])
    expect(src).toEqual([
      'http',
      'http/landing',
      'http/landing/static',
      'http/landing/static/favicon.svg',
      'http/landing/static/landing.css',
      'http/landing/static/landing.js',
    ])
    expect(dist).not.toContain('devnet')
    expect(dist).toContain('main.js')
    expect(names).toContain('better-sqlite3')
    expect(names.filter((name: string) => DEV_ONLY.includes(name))).toEqual([])
    expect(uid).toBe(1000)
  })

  it('takes one paid call on each rail, exactly charged', async () => {
    await paidHash('evm', 0, 'container on Base')
    await paidHash('solana', 0, 'container on Solana')
  })

  it('answers /health, passes its HEALTHCHECK, and the check fails when nothing answers', async () => {
    const health = await json(await fetch(`${base}/health`))
    expect(health.status).toBe('ok')
    expect(health.checks.facilitator.status).toBe('ok')
    // The container reaches the facilitator through the test's proxy: its host, on loopback.
    const facilitator = expect.stringMatching(/^127\.0\.0\.1:\d+$/)
    expect(health.checks.rails.networks).toEqual([
      { id: 'evm', network: 'eip155:8453', live: true, facilitator },
      { id: 'solana', network: stack.solana.network, live: true, facilitator },
    ])
    expect((await podman(['healthcheck', 'run', NAME])).code).toBe(0)
    const [container] = JSON.parse(await podmanOk(['inspect', NAME])) as [
      { State: { Health: { Status: string; Log: Array<{ ExitCode: number; Output: string }> } } },
    ]
    expect(container.State.Health.Status).toBe('healthy')
    const last = container.State.Health.Log.at(-1)
    expect(last?.ExitCode).toBe(0)
    // One JSON log line, as the service writes them (the time varies).
    expect({ ...JSON.parse(last?.Output ?? ''), time: 0 }).toEqual({
      level: 30,
      time: 0,
      url: `http://127.0.0.1:${port}/health`,
      detail: '200 ok',
      msg: 'healthy',
    })
    // The same check against a port nothing listens on: the probe can fail.
    const closed = await freePort()
    const failing = await podman([
      'exec',
      '--env',
      `PORT=${closed}`,
      NAME,
      'node',
      'dist/healthcheck.js',
    ])
    expect({ ...failing, stdout: '' }).toEqual({ code: 1, stdout: '', stderr: '' })
    expect(failing.stdout.endsWith('\n')).toBe(true)
    expect({ ...JSON.parse(failing.stdout), time: 0 }).toEqual({
      level: 40,
      time: 0,
      url: `http://127.0.0.1:${closed}/health`,
      detail: 'ECONNREFUSED',
      msg: 'unhealthy',
    })
  })

  it('keeps the SQLite store, the generated salt, receipt key and dev channel key in the /app/data volume, as user node', async () => {
    const files = await podmanOk(['exec', NAME, 'sh', '-c', 'stat -c "%n %U" /app/data/*'])
    expect(files.trim().split('\n').sort()).toEqual([
      '/app/data/batch-settlement-authorizer-key node',
      '/app/data/receipt-signing-key node',
      '/app/data/telemetry-salt node',
      '/app/data/telemetry.sqlite node',
      '/app/data/telemetry.sqlite-shm node',
      '/app/data/telemetry.sqlite-wal node',
    ])
    const [mounts] = JSON.parse(await podmanOk(['inspect', '--format', 'json', NAME])) as [
      { Mounts: Array<{ Type: string; Destination: string }> },
    ]
    expect(mounts.Mounts).toEqual([
      expect.objectContaining({ Type: 'volume', Destination: '/app/data' }),
    ])
  })

  it('finishes a paid call in flight on SIGTERM (podman stop), then exits 0', async () => {
    const before = await payToBalance(stack, 'evm')
    const hold = proxy.holdNextSettle()
    const pay = await paidFetch(payerKeys(stack, 'evm', 1), 'evm')
    const call = pay(`${base}/hash`, { method: 'POST', body: JSON.stringify({ input: 'drain' }) })
    await hold.arrived
    // `podman stop` sends the image's STOPSIGNAL and waits; its --time (SIGKILL after) is longer
    // than SHUTDOWN_TIMEOUT_MS, so the exit code is the service's own: 0 when it drained in
    // time, 1 when its deadline passed, 137 if podman had to kill it.
    const stopped = podman(
      ['stop', '--time', String(SHUTDOWN_TIMEOUT_MS / 1000 + 30), NAME],
      120_000,
    )
    await waitFor(
      async () =>
        (await logLines(NAME)).some((line) => line.msg?.toString().startsWith('shutting down')),
      'the shutdown log line',
    )
    hold.release()
    const res = await call
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true, result: hashResult('drain') })
    expect((await payToBalance(stack, 'evm')) - before).toBe(1000n)
    expect((await stopped).code).toBe(0)
    const exitCode = await podmanOk(['inspect', '--format', '{{.State.ExitCode}}', NAME])
    expect(exitCode.trim()).toBe('0')

    // JSON lines on stdout, from start to a clean stop.
    const lines = await logLines(NAME)
    const messages = lines.map((line) => line.msg)
    expect(messages).toContain('listening')
    expect(messages.at(-1)).toBe('shut down')
    expect(lines.find((line) => line.msg === 'listening')).toMatchObject({ host: '0.0.0.0', port })
    expect(lines.some((line) => line.level === 'error' || line.level === 'fatal')).toBe(false)
  })

  it('starts fail-closed without a facilitator: a paid route answers 503', async () => {
    const failPort = await freePort()
    const failBase = `http://127.0.0.1:${failPort}`
    const env = { ...stack.serviceEnv, PORT: String(failPort), TOOL_WORKERS: '1' }
    delete (env as Record<string, string | undefined>).FACILITATOR_URL
    await startContainer(FAIL_CLOSED_NAME, env)
    await waitFor(
      async () => (await fetch(`${failBase}/health`).catch(() => undefined))?.status === 200,
      `${FAIL_CLOSED_NAME} listening`,
    )
    const res = await fetch(`${failBase}/hash`, { method: 'POST', body: '{"input":"abc"}' })
    expect(res.status).toBe(503)
    expect((await json(res)).code).toBe('facilitator_unavailable')
    const health = await json(await fetch(`${failBase}/health`))
    expect(health.checks.facilitator.status).toBe('unconfigured')
    const lines = await logLines(FAIL_CLOSED_NAME)
    expect(lines).toContainEqual(
      expect.objectContaining({
        msg: 'FACILITATOR_URL is not set: every paid call answers 503 (fail-closed)',
      }),
    )
  })
})

const noCompose =
  unavailable ??
  (existsSync('/usr/bin/podman-compose') ? undefined : 'apt-get install podman-compose')
if (noCompose && !unavailable) console.warn(`compose cluster test skipped: ${noCompose}`)

// deploy/compose.yaml, run for real with Debian's podman-compose: the image built above, three
// instances behind nginx on PostgreSQL and Redis. The official nginx, postgres and redis images
// cannot be pulled here; local stand-ins take their place (test/fixtures/compose-stand-ins).
describe.skipIf(noCompose)('deploy/compose.yaml (podman-compose)', () => {
  const project = `payload-tools-e2e-${process.pid}`
  let dir: string
  let front: string

  /** Runs podman-compose on the copy of deploy/ in `dir`, with podman set up as above. */
  const compose = (args: string[], timeoutMs = 300_000) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(
        'podman-compose',
        ['-p', project, '-f', 'compose.yaml', ...args],
        {
          cwd: dir,
          timeout: timeoutMs,
          maxBuffer: 64 * 1024 * 1024,
          // runc and the ulimits for every podman command podman-compose runs.
          env: { PATH: process.env.PATH, CONTAINERS_CONF: join(dir, 'containers.conf') },
        },
        (error, stdout, stderr) =>
          resolve({
            code: error ? (typeof error.code === 'number' ? error.code : -1) : 0,
            stdout,
            stderr,
          }),
      )
    })
  const instance = (name: string) => `${project}_${name}_1`
  /**
   * Whether an instance's facilitator check says paid calls are served: `ok`, or `degraded` with
   * its one facilitator answering. A `/supported` that failed while the containers were starting
   * (a run failed so, waiting 180 s for `ok`) keeps it `degraded` for the 5 minutes of
   * RECENT_WINDOW_MS after it answers again.
   */
  const serving = (facilitator?: {
    status: string
    facilitators?: { status: string; last_ok_at?: string }[]
  }) =>
    facilitator?.status === 'ok' ||
    (facilitator?.status === 'degraded' &&
      facilitator.facilitators?.length === 1 &&
      facilitator.facilitators[0]?.status === 'degraded' &&
      facilitator.facilitators[0]?.last_ok_at !== undefined)
  /** GET `path` of one instance, asked inside its container (instances are not published). */
  const instanceJson = async (name: string, path: string) =>
    JSON.parse(
      await podmanOk([
        'exec',
        instance(name),
        'node',
        '-e',
        `fetch('http://127.0.0.1:8402${path}').then((r) => r.text()).then(console.log)`,
      ]),
    )

  beforeAll(async () => {
    const from = performance.now()
    const standIns = await buildComposeStandIns(baseImage)
    dir = mkdtempSync(join(tmpdir(), 'payload-compose-'))
    for (const file of ['compose.yaml', 'nginx.conf', 'nginx-entrypoint.sh']) {
      copyFileSync(new URL(`../deploy/${file}`, import.meta.url), join(dir, file))
    }
    writeFileSync(
      join(dir, 'containers.conf'),
      '[containers]\ndefault_ulimits = ["nofile=1024:1024", "nproc=1024:1024"]\n[engine]\nruntime = "runc"\n',
    )
    const frontPort = await freePort()
    front = `http://127.0.0.1:${frontPort}`
    // deploy/.env as an operator writes it (env.example).
    const env: Record<string, string> = {
      POSTGRES_PASSWORD: 'compose-e2e-password',
      TELEMETRY_SALT: 'compose-e2e-salt-0123456789',
      PUBLIC_BASE_URL: front,
      FRONT_PORT: String(frontPort),
      ...stack.serviceEnv,
      FACILITATOR_URL: `http://host.containers.internal:${proxy.port}`,
      TOOL_WORKERS: '1',
      PAYLOAD_TOOLS_IMAGE: IMAGE,
      NGINX_IMAGE: standIns.nginx,
      POSTGRES_IMAGE: standIns.postgres,
      REDIS_IMAGE: standIns.redis,
    }
    writeFileSync(
      join(dir, '.env'),
      Object.entries(env)
        .map(([key, value]) => `${key}=${value}`)
        .join('\n'),
    )
    const up = await compose(['up', '-d'])
    expect(up.code, up.stderr.slice(-3000)).toBe(0)
    // podman-compose starts the services in order without waiting for health (docker compose
    // waits); an instance that starts before PostgreSQL exits and is restarted (unless-stopped).
    const deadline = Date.now() + 180_000
    for (;;) {
      const res = await fetch(`${front}/health`).catch(() => undefined)
      if (res?.status === 200 && serving((await json(res)).checks.facilitator)) break
      if (Date.now() > deadline) {
        const logs = await Promise.all(['app1', 'nginx'].map((n) => podman(['logs', instance(n)])))
        throw new Error(
          `the front never answered:\n${logs.map((l) => l.stdout + l.stderr).join('\n')}`,
        )
      }
      await sleep(500)
    }
    // nginx answers from the first instance ready; each of the others may still be reaching its
    // facilitator or Redis (a run failed here once with app1 not yet connected).
    const seen: string[] = []
    for (const name of ['app1', 'app2', 'app3']) {
      for (;;) {
        const health = await instanceJson(name, '/health').catch((error: Error) => error)
        const checks = health instanceof Error ? undefined : health.checks
        if (serving(checks?.facilitator) && checks?.redis?.status === 'ok') {
          seen.push(`${name} ${checks.facilitator.status}`)
          break
        }
        if (Date.now() > deadline) {
          const logs = await podman(['logs', '--tail', '40', instance(name)])
          throw new Error(
            `${name} never reached its facilitator and Redis; its /health: ${health instanceof Error ? health.message : JSON.stringify(checks)}\n${logs.stdout}${logs.stderr}`,
          )
        }
        await sleep(500)
      }
    }
    figures.push(
      `compose cluster up (stand-ins built, 6 containers healthy): ${((performance.now() - from) / 1000).toFixed(1)} s; facilitator checks: ${seen.join(', ')}`,
    )
  }, 30 * 60_000)

  afterAll(async () => {
    if (!dir) return
    // The instances' anonymous /app/data volumes, which podman-compose 1.0.3's `down -v` leaves.
    const volumes: string[] = []
    for (const name of ['app1', 'app2', 'app3']) {
      const mounts = await podman([
        'inspect',
        '--format',
        '{{range .Mounts}}{{.Name}} {{end}}',
        instance(name),
      ])
      volumes.push(...mounts.stdout.split(' ').filter((v) => /^[0-9a-f]{64}$/.test(v)))
    }
    await compose(['down', '-v'], 180_000)
    await podman(['network', 'rm', `${project}_default`])
    if (volumes.length > 0) await podman(['volume', 'rm', ...volumes])
    rmSync(dir, { recursive: true, force: true })
  }, 300_000)

  it('starts every service healthy: instances on PostgreSQL and Redis, nginx in front', async () => {
    for (const name of ['app1', 'app2', 'app3', 'nginx', 'postgres', 'redis']) {
      const check = await podman(['healthcheck', 'run', instance(name)])
      expect(check.code, name).toBe(0)
    }
    for (const name of ['app1', 'app2', 'app3']) {
      const health = await instanceJson(name, '/health')
      expect(serving(health.checks.facilitator), name).toBe(true)
      expect(health.checks, name).toMatchObject({
        telemetry: { status: 'ok', backend: 'postgres', salt: 'configured' },
        redis: { status: 'ok' },
      })
    }
  })

  it('takes a paid call on each rail through nginx, counted once in the shared /stats', async () => {
    await paidHash('evm', 1, 'compose on Base', front)
    await paidHash('solana', 1, 'compose on Solana', front)
    const paid = Date.now()
    // Each instance, asked directly, counts both from the one PostgreSQL (a fresh database), once
    // its cached figures (2 s) are newer than the calls.
    for (const name of ['app1', 'app2', 'app3']) {
      let stats = await instanceJson(name, '/stats')
      while (Date.parse(stats.generated_at) <= paid) {
        await sleep(500)
        stats = await instanceJson(name, '/stats')
      }
      expect(stats.successful_paid_calls, name).toBe(2)
    }
    // The duplicate-settlement guard's records of the two payments are in the shared Redis.
    const keys = await podmanOk([
      'exec',
      instance('redis'),
      'redis-cli',
      '--scan',
      '--pattern',
      'payload-tools:guard:*',
    ])
    expect(keys.trim().split('\n')).toHaveLength(2)
  })
})
