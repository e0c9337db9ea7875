import { execFile } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync } from 'node:fs'
import {
  copyFile,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rename,
  rm,
  stat,
  writeFile,
} from 'node:fs/promises'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { basename, join, resolve } from 'node:path'
import { promisify } from 'node:util'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'

const run = promisify(execFile)

/** The bridge package in this repository. */
export const BRIDGE_DIR = resolve(import.meta.dirname, '../../clients/mcp-bridge')

/** The bridge as a user gets it: `npm pack`, then installed from the tarball in an empty dir. */
export interface InstalledBridge {
  /** The installed bin, `<dir>/node_modules/.bin/payload-tools-mcp`. */
  bin: string
  /** The tarball `npm pack` made. */
  tarball: string
  /** A scratch directory for the tests (state directories, homes). */
  scratch: string
  remove(): Promise<void>
}

/** The newest modification time under `dir` (files only), in milliseconds; 0 when absent. */
async function newest(dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(() => [])
  const times = await Promise.all(
    entries
      .filter((e) => e.isFile())
      .map(async (e) => (await stat(join(e.parentPath, e.name))).mtimeMs),
  )
  return Math.max(0, ...times)
}

/**
 * Builds the bridge unless `dist/` is newer than every source: the root `npm test` has just built
 * it (its typecheck step), and a second compile would cost tens of seconds on a busy machine.
 */
async function ensureBuilt(): Promise<void> {
  const [sources, configs, built] = await Promise.all([
    newest(join(BRIDGE_DIR, 'src')),
    Promise.all(
      ['package.json', 'tsconfig.json', 'tsconfig.build.json'].map(
        async (f) => (await stat(join(BRIDGE_DIR, f))).mtimeMs,
      ),
    ),
    stat(join(BRIDGE_DIR, 'dist', 'bin.js')).then(
      (s) => s.mtimeMs,
      () => 0,
    ),
  ])
  if (built > Math.max(sources, ...configs)) return
  await run('npm', ['run', 'build'], { cwd: BRIDGE_DIR })
}

/**
 * Installs of the bridge's tarball, one directory per tarball (the first 16 hex digits of its
 * SHA-256), kept between runs: `npm pack` makes the same bytes from the same sources, and
 * installing the same tarball again would only repeat the same install (tens of seconds). The
 * tarball lies there too, so that `npx -y file:<tarball>` finds its own install in npm's cache.
 */
const INSTALLS = join(tmpdir(), 'payload-tools-bridge-installs')

/**
 * Packs the bridge (built from source if `dist/` is stale) and installs the tarball into an empty
 * directory, from the npm cache where it can (`--prefer-offline`); a tarball installed before is
 * found in {@link INSTALLS} instead.
 */
export async function installBridge(): Promise<InstalledBridge> {
  const root = await mkdtemp(join(tmpdir(), 'bridge-pack-'))
  const scratch = join(root, 'scratch')
  await Promise.all([mkdir(scratch), mkdir(INSTALLS, { recursive: true }), ensureBuilt()])
  // --ignore-scripts: prepack would build again; ensureBuilt has just made dist/ current.
  await run('npm', ['pack', '--pack-destination', root, '--silent', '--ignore-scripts'], {
    cwd: BRIDGE_DIR,
  })
  const packed = join(root, (await readdir(root)).find((f) => f.endsWith('.tgz')) ?? 'missing.tgz')
  const digest = createHash('sha256')
    .update(await readFile(packed))
    .digest('hex')
    .slice(0, 16)
  const dir = join(INSTALLS, digest)
  if (!existsSync(join(dir, 'installed'))) {
    // Made aside and renamed into place whole, so that no run finds half an install.
    const staging = await mkdtemp(join(INSTALLS, `${digest}.`))
    await copyFile(packed, join(staging, basename(packed)))
    await mkdir(join(staging, 'app'))
    // A package.json of its own, so npm installs here and not into a project further up.
    await writeFile(join(staging, 'app', 'package.json'), '{"private":true}\n')
    await run(
      'npm',
      [
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--no-package-lock',
        join(staging, basename(packed)),
      ],
      { cwd: join(staging, 'app') },
    )
    await writeFile(join(staging, 'installed'), `${new Date().toISOString()}\n`)
    // Another run may have put the same install in place meanwhile: keep that one.
    await rename(staging, dir).catch(() => rm(staging, { recursive: true, force: true }))
  }
  return {
    bin: join(dir, 'app', 'node_modules', '.bin', 'payload-tools-mcp'),
    tarball: join(dir, basename(packed)),
    scratch,
    remove: () => rm(root, { recursive: true, force: true }),
  }
}

/** A bridge process driven by the official MCP client over stdio. */
export interface BridgeSession {
  client: Client
  /** Every stderr line of the bridge so far. */
  stderr: string[]
  /** Errors the client transport reported (e.g. a non-JSON-RPC line on stdout). */
  transportErrors: Error[]
  close(): Promise<void>
}

/** The environment of a bridge process: PATH and a private HOME, plus `env`. */
function bridgeEnv(home: string, env: Record<string, string>): Record<string, string> {
  return {
    PATH: process.env.PATH ?? '',
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    ...env,
  }
}

/**
 * Spawns the installed bin as an MCP server and connects the official `Client` through
 * `StdioClientTransport`, collecting its stderr.
 *
 * @param bin - the command (the installed bin, or e.g. `npx` with `options.args`)
 * @param home - the bridge's HOME (its day file lives under `<home>/.config`)
 * @param options - `args` of the command; `connectTimeoutMs` for `initialize` (MCP SDK default
 *   60 s; a bin that npx installs first needs longer on a busy machine)
 */
export async function spawnBridge(
  bin: string,
  home: string,
  env: Record<string, string>,
  options: { args?: string[]; connectTimeoutMs?: number } = {},
): Promise<BridgeSession> {
  const transport = new StdioClientTransport({
    command: bin,
    args: options.args ?? [],
    env: bridgeEnv(home, env),
    stderr: 'pipe',
  })
  const stderr: string[] = []
  let partial = ''
  transport.stderr?.on('data', (chunk: Buffer) => {
    const lines = (partial + chunk.toString('utf8')).split('\n')
    partial = lines.pop() ?? ''
    stderr.push(...lines)
  })
  const transportErrors: Error[] = []
  const client = new Client({ name: 'bridge-e2e', version: '1.0.0' })
  client.onerror = (error) => transportErrors.push(error)
  await client.connect(
    transport,
    options.connectTimeoutMs === undefined ? undefined : { timeout: options.connectTimeoutMs },
  )
  return { client, stderr, transportErrors, close: () => client.close() }
}

/** Output of one `payload-tools-mcp call …` run. */
export interface CliRun {
  code: number
  stdout: string
  stderr: string
}

/** Runs the installed bin as a command line. */
export async function runBridgeCli(
  bin: string,
  home: string,
  env: Record<string, string>,
  args: string[],
): Promise<CliRun> {
  try {
    // stdin is closed at once, so a run that unexpectedly starts the stdio server ends too.
    const { stdout, stderr } = await run(bin, args, { env: bridgeEnv(home, env), timeout: 60_000 })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

/** An HTTP proxy in front of a facilitator. */
export interface FacilitatorProxy {
  url: string
  stop(): Promise<void>
}

/**
 * A proxy in front of the real facilitator that passes `/supported` and `/verify` through and
 * hands `/settle` the same PaymentPayload with `paymentRequirements.payTo` changed to
 * `settleTo`. The real facilitator then refuses to settle (the signed authorization pays someone
 * else): a genuine settlement failure after a successful verify, with no transfer.
 */
export async function settleRedirectingProxy(
  facilitatorUrl: string,
  settleTo: string,
): Promise<FacilitatorProxy> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    let body = Buffer.concat(chunks).toString('utf8')
    if (req.url === '/settle' && body) {
      const parsed = JSON.parse(body) as { paymentRequirements: { payTo: string } }
      parsed.paymentRequirements.payTo = settleTo
      body = JSON.stringify(parsed)
    }
    try {
      const upstream = await fetch(`${facilitatorUrl}${req.url}`, {
        method: req.method ?? 'GET',
        headers: { 'Content-Type': 'application/json' },
        ...(req.method === 'POST' ? { body } : {}),
      })
      res.writeHead(upstream.status, { 'Content-Type': 'application/json' })
      res.end(await upstream.text())
    } catch {
      res.writeHead(502).end()
    }
  })
  return listenOnLoopback(server)
}

/**
 * Starts `server` on an ephemeral loopback port; `stop` closes it and its kept-alive connections.
 *
 * @example const { url, stop } = await listenOnLoopback(createServer(handler)) // 'http://127.0.0.1:40123'
 */
async function listenOnLoopback(server: Server): Promise<{ url: string; stop(): Promise<void> }> {
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise<void>((done) => {
        server.close(() => done())
        server.closeAllConnections()
      }),
  }
}

/** A proxy in front of the service; `stop` closes it. */
export interface ServiceProxy {
  url: string
  stop(): Promise<void>
}

/**
 * A proxy in front of the service that hands every JSON answer of `POST /mcp` to `tamper` before
 * passing it on (a man in the middle, or a faulty service); everything else goes through
 * unchanged (the JWKS included).
 *
 * @param tamper - changes the parsed JSON-RPC answer in place
 */
export async function tamperingProxy(
  serviceUrl: string,
  tamper: (answer: Record<string, unknown>) => Promise<void>,
): Promise<ServiceProxy> {
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const headers: Record<string, string> = {}
    for (const name of ['content-type', 'accept', 'mcp-protocol-version', 'mcp-session-id']) {
      const value = req.headers[name]
      if (typeof value === 'string') headers[name] = value
    }
    try {
      const upstream = await fetch(`${serviceUrl}${req.url}`, {
        method: req.method ?? 'GET',
        headers,
        ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
      })
      let body = await upstream.text()
      const type = upstream.headers.get('content-type') ?? 'application/json'
      if (req.url === '/mcp' && type.startsWith('application/json') && body) {
        const answer = JSON.parse(body) as Record<string, unknown>
        await tamper(answer)
        body = JSON.stringify(answer)
      }
      res.writeHead(upstream.status, { 'Content-Type': type })
      res.end(body)
    } catch {
      res.writeHead(502).end()
    }
  })
  return listenOnLoopback(server)
}
