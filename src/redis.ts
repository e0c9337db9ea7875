import { Redis } from 'ioredis'
import { logger } from './logger.js'

/** Options of {@link createRedis}. Durations are milliseconds. */
export interface RedisOptions {
  /** `redis://[user:password@]host:port[/db]` or `rediss://…` (REDIS_URL); never logged. */
  url: string
  /** Bound on connecting and on each command (REDIS_TIMEOUT_MS). */
  timeoutMs: number
  /**
   * Told of every command's end (the operator metrics): its name, `ok` or `error`, and the seconds
   * from sending to the reply. Every user of the connection (guard, rate limit) is timed.
   */
  onCommand?: (command: { command: string; result: 'ok' | 'error'; seconds: number }) => void
}

/** What the service knows about its Redis connection, without I/O (for /health). */
export interface RedisState {
  /** `ready`: connected; `down`: not connected right now (commands fail at once). */
  status: 'ready' | 'down'
  /** Epoch ms of the last time the connection became ready. */
  lastReadyAt?: number
  /** Short reason of the last connection failure (an error code such as ECONNREFUSED). */
  lastError?: string
}

/** A Redis connection shared by the parts of one instance, with its last-known state. */
export interface SharedRedis {
  client: Redis
  state(): RedisState
  /** Closes the connection (QUIT, then disconnect after the timeout). */
  close(): Promise<void>
}

/** Longest pause between reconnection attempts while Redis is down, in milliseconds. */
export const REDIS_RECONNECT_MAX_MS = 1_000

/**
 * Opens the instance's Redis connection (ioredis), set up to fail fast rather than wait: a command
 * sent while Redis is down or slow rejects within `timeoutMs` (no offline queue, no retry of a
 * command, `commandTimeout`), so that its callers can fail closed in bounded time. The connection
 * itself keeps reconnecting in the background, at most {@link REDIS_RECONNECT_MAX_MS} apart.
 *
 * Connection errors are logged once per outage, by code only (the URL may hold a password).
 *
 * @example
 * const redis = createRedis({ url: 'redis://127.0.0.1:6379', timeoutMs: 500 })
 * await redis.client.set('k', 'v', 'PX', 120_000, 'NX') // 'OK' or null
 */
export function createRedis(options: RedisOptions): SharedRedis {
  let current: RedisState = { status: 'down' }
  const client = new Redis(options.url, {
    connectTimeout: options.timeoutMs,
    commandTimeout: options.timeoutMs,
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    retryStrategy: (attempt) => Math.min(attempt * 100, REDIS_RECONNECT_MAX_MS),
  })
  if (options.onCommand) timeCommands(client, options.onCommand)
  client.on('ready', () => {
    if (current.lastError) logger.info('redis: connected again')
    current = { status: 'ready', lastReadyAt: Date.now() }
  })
  client.on('error', (error: Error & { code?: string }) => {
    const reason = error.code ?? error.name
    if (current.status === 'ready' || current.lastError === undefined) {
      logger.warn({ errCode: reason }, 'redis: connection failed; shared state unavailable')
    }
    current = { ...current, status: 'down', lastError: reason }
  })
  client.on('close', () => {
    if (current.status === 'ready') current = { ...current, status: 'down', lastError: 'closed' }
  })
  return {
    client,
    state: () => ({ ...current }),
    async close() {
      try {
        await Promise.race([
          client.quit(),
          new Promise((resolve) => setTimeout(resolve, options.timeoutMs).unref()),
        ])
      } catch {
        // Already closed or down: nothing to flush.
      } finally {
        client.disconnect()
      }
    },
  }
}

/**
 * Times every command of this client. ioredis 6 also publishes commands on the process-wide
 * `ioredis:command` diagnostics channel, but that one cannot tell clients apart (several services
 * in one process, tests); wrapping this instance's `sendCommand` can.
 */
function timeCommands(client: Redis, onCommand: NonNullable<RedisOptions['onCommand']>): void {
  const send = client.sendCommand.bind(client)
  // A command may pass through sendCommand again (resent after a reconnect): timed once.
  const timed = new WeakSet<object>()
  client.sendCommand = (command, stream) => {
    if (timed.has(command)) return send(command, stream)
    timed.add(command)
    const started = performance.now()
    const seconds = () => (performance.now() - started) / 1000
    // Observed on the command's own promise: the caller's handling of it is unchanged, and this
    // branch handles its rejection.
    command.promise.then(
      () => onCommand({ command: command.name, result: 'ok', seconds: seconds() }),
      () => onCommand({ command: command.name, result: 'error', seconds: seconds() }),
    )
    return send(command, stream)
  }
}
