import { type ChildProcess, spawn } from 'node:child_process'
import { closeSync, openSync, readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'

/** How a child process ended: its exit code, or the signal that ended it. */
export interface ChildExit {
  code: number | null
  signal: NodeJS.Signals | null
}

/** A child process started by {@link spawnChild}. */
export interface Child {
  /** The pid of the program itself (setpriv execs it, so there is no wrapper in between). */
  readonly pid: number
  /** Resolves once the process has exited; never rejects. */
  readonly exited: Promise<ChildExit>
  /** True until the process has exited. */
  running(): boolean
  /** Sends `signal`; false when the process is already gone. */
  kill(signal: NodeJS.Signals): boolean
  /**
   * Sends `signal` (default SIGTERM), then SIGKILL if the process is still running after
   * `graceMs` (default 10 000); resolves with the exit. Idempotent while the process runs.
   */
  stop(options?: { signal?: NodeJS.Signals; graceMs?: number }): Promise<ChildExit>
  /** The last `bytes` (default 4 000) of the log file, for error messages; '' without one. */
  logTail(bytes?: number): string
}

/** Options of {@link spawnChild}. */
export interface SpawnChildOptions {
  /** The complete environment of the child (nothing is inherited unless passed here). */
  env: Record<string, string | undefined>
  cwd?: string
  /** File that receives stdout and stderr (appended); without it the output is discarded. */
  logFile?: string
  /**
   * Run as this OS user (name), with its groups: how root starts PostgreSQL, which refuses to
   * run as root. Ignored when this process is not root.
   */
  user?: string
  /**
   * Signal the kernel sends the child when this process dies, however it dies (even SIGKILL):
   * no orphan survives a killed test run or a Ctrl-C. Default SIGTERM.
   */
  parentDeathSignal?: NodeJS.Signals
}

const SETPRIV = '/usr/bin/setpriv'

/**
 * Spawns `command` through util-linux `setpriv`, which sets the parent-death signal
 * (`PR_SET_PDEATHSIG`), optionally switches user, then execs the command: the child's pid is the
 * program's own, so signals reach it directly (a SIGKILL fault test kills the real process, not a
 * wrapper). Linux only; `setpriv` ships in util-linux, an essential Debian package.
 *
 * Why not a shell watchdog like anvil's: it hides the program's exit status and pid behind a
 * shell, and the fault tests need both.
 *
 * @example
 * const redis = spawnChild('redis-server', ['--port', '6390'], { env: { PATH: process.env.PATH } })
 * await redis.stop() // SIGTERM, SIGKILL after 10 s
 *
 * @throws Error when the process cannot be spawned (no setpriv, command not found)
 */
export function spawnChild(
  command: string,
  args: readonly string[],
  options: SpawnChildOptions,
): Child {
  const switchUser =
    options.user !== undefined && process.getuid?.() === 0
      ? ['--reuid', options.user, '--regid', options.user, '--init-groups']
      : []
  const setprivArgs = [
    '--pdeathsig',
    options.parentDeathSignal ?? 'SIGTERM',
    ...switchUser,
    '--',
    command,
    ...args,
  ]
  const fd = options.logFile === undefined ? undefined : openSync(options.logFile, 'a')
  let child: ChildProcess
  try {
    child = spawn(SETPRIV, setprivArgs, {
      env: options.env,
      cwd: options.cwd,
      stdio: ['ignore', fd ?? 'ignore', fd ?? 'ignore'],
    })
  } finally {
    // The child holds its own copy of the descriptor.
    if (fd !== undefined) closeSync(fd)
  }
  const pid = child.pid
  if (pid === undefined) throw new Error(`cannot spawn ${command}: ${SETPRIV} is missing?`)
  let exit: ChildExit | undefined
  const exited = new Promise<ChildExit>((resolve) => {
    child.once('exit', (code, signal) => {
      exit = { code, signal }
      resolve(exit)
    })
    child.once('error', () => {
      exit ??= { code: null, signal: null }
      resolve(exit)
    })
  })
  let stopping: Promise<ChildExit> | undefined

  return {
    pid,
    exited,
    running: () => exit === undefined,
    kill: (signal) => exit === undefined && child.kill(signal),
    stop({ signal = 'SIGTERM', graceMs = 10_000 } = {}) {
      if (exit) return Promise.resolve(exit)
      stopping ??= (async () => {
        child.kill(signal)
        const done = await Promise.race([exited, sleep(graceMs, undefined, { ref: false })])
        if (done) return done
        child.kill('SIGKILL')
        return exited
      })()
      return stopping
    },
    logTail(bytes = 4_000) {
      if (options.logFile === undefined) return ''
      try {
        return readFileSync(options.logFile, 'utf8').slice(-bytes)
      } catch {
        return ''
      }
    },
  }
}

/**
 * Polls `check` every `intervalMs` until it resolves true.
 *
 * @throws Error naming `what` after `timeoutMs`, or at once when `alive()` turns false (the
 *   process being waited for has exited)
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean>,
  {
    timeoutMs,
    intervalMs = 50,
    alive,
  }: { timeoutMs: number; intervalMs?: number; alive?: () => boolean },
): Promise<void> {
  const deadline = performance.now() + timeoutMs
  for (;;) {
    if (await check().catch(() => false)) return
    if (alive && !alive()) throw new Error(`${what}: the process exited`)
    if (performance.now() > deadline) throw new Error(`${what}: not ready within ${timeoutMs} ms`)
    await sleep(intervalMs)
  }
}

/**
 * The command `npm start` runs (package.json's `scripts.start`), word by word:
 * `['node', …Node flags, 'dist/main.js']`. What the image's entrypoint, the Node smoke run and
 * the benches start the service with.
 */
export function startCommand(): string[] {
  const manifest = JSON.parse(
    readFileSync(new URL('../../package.json', import.meta.url), 'utf8'),
  ) as { scripts: { start: string } }
  return manifest.scripts.start.split(/\s+/)
}

/**
 * The Node flags of {@link startCommand} (`['--v8-pool-size=1', …]`): what a bench's child that
 * serves the service in-process adds to its `execArgv` to run as deployed.
 */
export function startNodeFlags(): string[] {
  return startCommand().filter((word) => word.startsWith('--'))
}
