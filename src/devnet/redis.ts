import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { type Child, spawnChild, waitFor } from './child.js'
import { freePort } from './ports.js'

/** The system Redis the tests and `npm run cluster` share. Never stopped. */
export const SYSTEM_REDIS_URL = 'redis://127.0.0.1:6379'

/** A Redis server of our own, which a test may stop and start. */
export interface PrivateRedis {
  /** `redis://127.0.0.1:<port>`. */
  url: string
  port: number
  running(): boolean
  /** SIGTERM (nothing to save: persistence is off); resolves once the server has exited. */
  stop(): Promise<void>
  /** Starts an empty server again on the same port; resolves once it answers PING. */
  start(): Promise<void>
  /** Stops the server and deletes its directory. Idempotent. */
  destroy(): Promise<void>
}

/**
 * Starts `redis-server` on a free port of 127.0.0.1 with persistence off (`--save ''
 * --appendonly no`), so that a test can stop Redis without touching the shared system server.
 * A restart starts empty, as a Redis without persistence does after a crash.
 *
 * @example
 * const redis = await startPrivateRedis()
 * await redis.stop()  // the outage
 * await redis.start() // back on the same port, empty
 * await redis.destroy()
 *
 * @throws Error when redis-server is missing or does not answer PING within 10 s
 */
export async function startPrivateRedis(options: { port?: number } = {}): Promise<PrivateRedis> {
  const port = options.port ?? (await freePort())
  const dir = mkdtempSync(join(tmpdir(), 'payload-redis-'))
  const log = join(dir, 'redis.log')
  let server: Child | undefined
  const start = async () => {
    if (server?.running()) return
    const child = spawnChild(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
      ],
      { env: { PATH: process.env.PATH }, logFile: log },
    )
    server = child
    try {
      await waitFor('private redis', () => pong(port), { timeoutMs: 10_000, alive: child.running })
    } catch (error) {
      await child.stop({ signal: 'SIGKILL' })
      throw new Error(`${(error as Error).message}: ${child.logTail()}`)
    }
  }
  const stop = async () => {
    await server?.stop({ signal: 'SIGTERM', graceMs: 5_000 })
  }
  let destroying: Promise<void> | undefined
  try {
    await start()
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    running: () => server?.running() ?? false,
    stop,
    start,
    destroy() {
      destroying ??= (async () => {
        await stop()
        rmSync(dir, { recursive: true, force: true })
      })()
      return destroying
    },
  }
}

/**
 * True when Redis at 127.0.0.1:`port` answers an inline `PING` with `+PONG` (RESP). A readiness
 * probe only: the service talks to Redis through a maintained client.
 */
export function pong(port: number, timeoutMs = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port })
    let reply = ''
    const done = (ok: boolean) => {
      socket.destroy()
      resolve(ok)
    }
    socket.setTimeout(timeoutMs, () => done(false))
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1')
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'))
    })
    socket.once('error', () => done(false))
    socket.once('close', () => done(reply.startsWith('+PONG')))
  })
}
