import { WRITE_TIMEOUT_MS } from './telemetry/limits.js'

/**
 * The service's shutdown state, shared by the HTTP drain (which refuses new requests) and the
 * payment gate (which starts no settlement that could not finish before the deadline).
 */
export interface Lifecycle {
  /** Starts the graceful shutdown; the deadline is SHUTDOWN_TIMEOUT_MS from now. Idempotent. */
  beginShutdown(): void
  shuttingDown(): boolean
  /** Epoch milliseconds by which the process exits; undefined while it serves. */
  deadline(): number | undefined
  /**
   * Whether a settlement may start now: always while serving; during shutdown only if it can
   * settle (`settleMs`: the settle request, its pending retry and the guard writes), record the
   * `settled` event (WRITE_TIMEOUT_MS) and reply before the deadline, so that a payment is never
   * settled without its reply.
   */
  canSettle(): boolean
}

/** Options of {@link createLifecycle}. */
export interface LifecycleOptions {
  /** SHUTDOWN_TIMEOUT_MS */
  shutdownTimeoutMs: number
  /** The longest a settlement takes once started, in milliseconds (`worstSettleMs`). */
  settleMs: number
  /** Clock in epoch milliseconds (tests). */
  now?: () => number
}

/** Time left for the reply once the `settled` event is written, in milliseconds. */
const REPLY_MARGIN_MS = 500

/**
 * Creates the lifecycle state.
 *
 * @throws {Error} naming the variables when SHUTDOWN_TIMEOUT_MS leaves no time to settle a call
 *   that was running when the shutdown began (settle, the `settled` event and the reply): every
 *   call in flight would then be refused `shutting_down` after its tool ran
 * @example
 * const lifecycle = createLifecycle({ shutdownTimeoutMs: 30000, settleMs: 21000 })
 * process.on('SIGTERM', () => lifecycle.beginShutdown())
 */
export function createLifecycle(options: LifecycleOptions): Lifecycle {
  const needed = options.settleMs + WRITE_TIMEOUT_MS + REPLY_MARGIN_MS
  if (options.shutdownTimeoutMs < needed) {
    throw new Error(
      `SHUTDOWN_TIMEOUT_MS (${options.shutdownTimeoutMs}) leaves no time to finish a paid call in flight: ` +
        `its settlement (${options.settleMs} ms: FACILITATOR_SETTLE_TIMEOUT_MS and the guard's writes), the ` +
        `telemetry write (${WRITE_TIMEOUT_MS}) and the reply (${REPLY_MARGIN_MS}) need ${needed} ms. ` +
        'Raise SHUTDOWN_TIMEOUT_MS or lower FACILITATOR_SETTLE_TIMEOUT_MS or REDIS_TIMEOUT_MS.',
    )
  }
  const now = options.now ?? Date.now
  let deadline: number | undefined
  return {
    beginShutdown() {
      deadline ??= now() + options.shutdownTimeoutMs
    },
    shuttingDown: () => deadline !== undefined,
    deadline: () => deadline,
    canSettle: () =>
      deadline === undefined ||
      now() + options.settleMs + WRITE_TIMEOUT_MS + REPLY_MARGIN_MS <= deadline,
  }
}
