import { createRequire } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { type Child, type ChildExit, spawnChild, waitFor } from './child.js'

/** The repository root: instances run `src/main.ts` from here unless given another directory. */
const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url))

/** tsx's loader and the entry point, by absolute location: an instance may run from any directory. */
const TSX_LOADER = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href
const MAIN = fileURLToPath(new URL('../main.ts', import.meta.url))

/** Variables passed through from this process to every instance (nothing else is inherited). */
const INHERITED = ['PATH', 'HOME', 'TMPDIR', 'LANG', 'TZ'] as const

/** One instance of the service, run as its own process (`node --import tsx src/main.ts`). */
export interface ServiceInstance {
  /** `i1`, `i2`, … */
  readonly name: string
  readonly port: number
  /** `http://127.0.0.1:<port>`: the instance itself, bypassing nginx. */
  readonly url: string
  /** Where its stdout and stderr (pino JSON lines) go. */
  readonly logFile: string
  /** The current process; undefined before the first start. */
  process(): Child | undefined
  running(): boolean
  /**
   * Starts the process (again) on the same port and resolves once GET /health answers 200 with
   * the facilitator reachable.
   *
   * @throws Error when it exits or is not ready within the timeout (with its log tail)
   */
  start(): Promise<void>
  /** Sends `signal` to the current process (a fault: SIGKILL, SIGTERM…); false when not running. */
  kill(signal: NodeJS.Signals): boolean
  /** SIGTERM, then SIGKILL after `graceMs` (default 20 000); the exit, or undefined if not running. */
  stop(graceMs?: number): Promise<ChildExit | undefined>
}

/** Options of {@link createServiceInstance}. */
export interface ServiceInstanceOptions {
  name: string
  port: number
  /** The service's configuration (see the README's table); PORT and HOST are set here. */
  env: Record<string, string>
  logFile: string
  /**
   * Its working directory, where its `./data` lives (the dev keys, a file channel store); default
   * the repository root.
   */
  cwd?: string
  /**
   * How long a start may take, in milliseconds; default 180 000, a bound on a hang: three instances
   * starting from the sources at once beside `stress-ng --cpu 2` on a 2-core machine took more than
   * 60 s (tsx loading the tools in every niced worker thread).
   */
  readyTimeoutMs?: number
}

/**
 * A service instance as a child process on 127.0.0.1:`port`, with exactly the environment given.
 *
 * It runs the TypeScript sources through tsx's loader in the same process (`node --import tsx
 * src/main.ts`), not a `tsc` build: measured here, a build costs 40–45 s while both ways start in
 * 3–8 s (module loading dominates), and the sources are what is under test. The pid is the
 * service's own (no tsx CLI wrapper), so a SIGKILL reaches the service itself.
 *
 * @example
 * const i1 = createServiceInstance({ name: 'i1', port: 8401, env: { FACILITATOR_URL: '…' }, logFile: '/tmp/i1.log' })
 * await i1.start()
 * i1.kill('SIGKILL')
 * await i1.start()
 */
export function createServiceInstance(options: ServiceInstanceOptions): ServiceInstance {
  const url = `http://127.0.0.1:${options.port}`
  const inherited = Object.fromEntries(INHERITED.map((name) => [name, process.env[name]]))
  let current: Child | undefined
  return {
    name: options.name,
    port: options.port,
    url,
    logFile: options.logFile,
    process: () => current,
    running: () => current?.running() ?? false,
    async start() {
      if (current?.running()) return
      const child = spawnChild(process.execPath, ['--import', TSX_LOADER, MAIN], {
        cwd: options.cwd ?? REPO_ROOT,
        env: { ...inherited, ...options.env, PORT: String(options.port), HOST: '127.0.0.1' },
        logFile: options.logFile,
        parentDeathSignal: 'SIGTERM',
      })
      current = child
      try {
        await waitFor(`instance ${options.name}`, () => ready(url), {
          timeoutMs: options.readyTimeoutMs ?? 180_000,
          intervalMs: 100,
          alive: child.running,
        })
      } catch (error) {
        await child.stop({ signal: 'SIGKILL' })
        throw new Error(`${(error as Error).message}\n${child.logTail(2_000)}`)
      }
    },
    kill: (signal) => current?.kill(signal) ?? false,
    async stop(graceMs = 20_000) {
      if (!current?.running()) return undefined
      return current.stop({ signal: 'SIGTERM', graceMs })
    },
  }
}

/** GET /health answers 200 and the facilitator's /supported has been loaded. */
async function ready(url: string): Promise<boolean> {
  const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2_000) })
  if (res.status !== 200) return false
  const body = (await res.json()) as { checks?: { facilitator?: { status?: string } } }
  return body.checks?.facilitator?.status === 'ok'
}
