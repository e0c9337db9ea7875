import type { Redis } from 'ioredis'
import { Mutex } from 'redis-semaphore'
import { describeError, logger } from '../logger.js'

/** The Redis key of the channel manager's lease. */
export const LEASE_KEY = 'payload-tools:channels:manager'

/** How long a lease outlives its holder's last renewal, in milliseconds. */
export const LEASE_TTL_MS = 30_000

/** How often a standby asks for the lease, in milliseconds. */
export const LEASE_POLL_MS = 5_000

/** How long giving the lease back may take at stop (Redis away), in milliseconds. */
export const LEASE_RELEASE_TIMEOUT_MS = 2_000

/** Who does the channel manager's work: exactly one instance at a time. */
export interface Lease {
  /** Whether this instance holds it now. */
  held(): boolean
  /**
   * Asks for it now and then every {@link LEASE_POLL_MS} while not held; `onGain` when it is
   * taken, `onLose` when it is lost (its renewal failed: another instance may take it).
   */
  start(handlers: { onGain(): void; onLose(): void }): void
  /** Stops asking and gives the lease back if held (another instance takes it at once). */
  stop(): Promise<void>
}

/**
 * The lease of the channel manager: a Redis mutex (redis-semaphore, renewed in the background
 * before it expires) when several instances share REDIS_URL, so that a standby takes over within
 * {@link LEASE_TTL_MS} of the holder's death; without Redis, the one instance always holds it.
 *
 * Two holders at once (a renewal lost in a partition) cost nothing but gas: claims are cumulative
 * on chain, so a voucher claimed twice moves its amount once.
 *
 * @param options.pollMs - how often a standby asks, in milliseconds (default {@link LEASE_POLL_MS})
 * @param options.key - the lease's Redis key (default {@link LEASE_KEY}; tests keep theirs apart)
 * @param options.ttlMs - how long it outlives a renewal, in milliseconds (default
 *   {@link LEASE_TTL_MS}); renewed every third of it
 * @example
 * const lease = createLease(redis?.client)
 * lease.start({ onGain: () => manager.start(), onLose: () => manager.stop() })
 */
export function createLease(
  redis: Redis | undefined,
  options: { pollMs?: number; key?: string; ttlMs?: number } = {},
): Lease {
  if (!redis) return alwaysHeld()
  const pollMs = options.pollMs ?? LEASE_POLL_MS
  const ttlMs = options.ttlMs ?? LEASE_TTL_MS
  let held = false
  let timer: NodeJS.Timeout | undefined
  let stopped = false
  let handlers: { onGain(): void; onLose(): void } | undefined
  // redis-semaphore 5.8 renews on a timer that does not catch a failed command: on the service's
  // client (no offline queue, a command timeout) a renewal during a Redis outage rejects
  // unhandled and ends the process. On a connection of its own that queues commands while Redis
  // is away and never times them out, a renewal waits for the reconnection instead, then learns
  // whether the lease is still ours. (Its release is bounded on its own: `stop`.)
  const connection = redis.duplicate({
    enableOfflineQueue: true,
    maxRetriesPerRequest: null,
    commandTimeout: undefined,
  })
  connection.on('error', () => {
    // The service's own client logs Redis outages; this one only waits them out.
  })
  const mutex = new Mutex(connection, options.key ?? LEASE_KEY, {
    lockTimeout: ttlMs,
    refreshInterval: Math.floor(ttlMs / 3),
    acquireAttemptsLimit: 1,
    onLockLost: () => {
      if (!held) return
      held = false
      logger.warn('channel manager: lease lost; another instance may take it')
      handlers?.onLose()
      schedule()
    },
  })

  async function ask(): Promise<void> {
    if (stopped || held) return
    try {
      if (await mutex.tryAcquire()) {
        held = true
        logger.info('channel manager: lease taken; this instance claims and settles')
        handlers?.onGain()
        return
      }
    } catch (error) {
      logger.warn({ err: describeError(error) }, 'channel manager: lease not asked (Redis)')
    }
    schedule()
  }

  function schedule(): void {
    if (stopped) return
    clearTimeout(timer)
    timer = setTimeout(() => void ask(), pollMs)
    timer.unref()
  }

  return {
    held: () => held,
    start(h) {
      handlers = h
      void ask()
    },
    async stop() {
      stopped = true
      clearTimeout(timer)
      if (held) {
        held = false
        // Bounded: with Redis away the command would wait for it; the lease then expires alone.
        let bound: NodeJS.Timeout | undefined
        await Promise.race([
          mutex.release(),
          new Promise((_, reject) => {
            bound = setTimeout(
              () => reject(new Error(`no answer within ${LEASE_RELEASE_TIMEOUT_MS} ms`)),
              LEASE_RELEASE_TIMEOUT_MS,
            )
          }),
        ])
          .catch((error: unknown) => {
            logger.warn({ err: describeError(error) }, 'channel manager: lease not released')
          })
          .finally(() => clearTimeout(bound))
      }
      connection.disconnect()
    },
  }
}

/** The lease of a single instance: always its own. */
function alwaysHeld(): Lease {
  let held = false
  return {
    held: () => held,
    start(handlers) {
      held = true
      handlers.onGain()
    },
    async stop() {
      held = false
    },
  }
}
