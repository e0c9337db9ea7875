import { worstQueueWaitMs } from '../runner/runner.js'

/** What bounds the duration of a paid call, in milliseconds (and seconds for the payment). */
export interface PaidCallBounds {
  /** FACILITATOR_TIMEOUT_MS: bounds each verify request. */
  facilitatorTimeoutMs: number
  /**
   * FACILITATOR_SETTLE_TIMEOUT_MS: bounds one settlement, all its attempts (failover, the SDK's
   * one `settlement_pending` retry) included (src/facilitators/router.ts).
   */
  settleTimeoutMs: number
  /** TOOL_WORKERS */
  workers: number
  /** TOOL_QUEUE_LIMIT */
  queueLimit: number
  /**
   * TOOL_TIMEOUT_MS: bounds each wait for a checker thread, each input check (on the free lane,
   * then, when it could not check, on the paid lane) and the run.
   */
  timeoutMs: number
  /** PaymentRequirements.maxTimeoutSeconds: how long the signed payment stays valid. */
  maxTimeoutSeconds: number
  /**
   * REDIS_TIMEOUT_MS when the guard is on Redis, else 0: a guard command waits at most twice that
   * (a connection not ready, then the command).
   */
  guardTimeoutMs?: number
  /**
   * Facilitators configured (FACILITATOR_URL), default 1: verify may try each in turn (failover),
   * each bounded by FACILITATOR_TIMEOUT_MS.
   */
  facilitators?: number
  /**
   * The telemetry write timeout (WRITE_TIMEOUT_MS) when the settlement ledger is on, else 0: the intent is
   * written before the settle and the outcome after, each bounded by it.
   */
  ledgerWriteMs?: number
}

/** Facilitators verify may try in turn: at least one. */
const verifyAttempts = (bounds: { facilitators?: number }) => Math.max(1, bounds.facilitators ?? 1)

/**
 * The longest a settlement takes once started, in milliseconds: the settle request and the one
 * retry the SDK makes of a `settlement_pending` answer (`settleWithPendingRetry`), which share one
 * FACILITATOR_SETTLE_TIMEOUT_MS, then the guard writes that record its outcome (in parallel, one
 * command of at most 2 × REDIS_TIMEOUT_MS), and the settlement ledger's intent before it and
 * outcome after it (one write timeout each). Shutdown starts no settlement it could not wait for.
 *
 * @example worstSettleMs({ settleTimeoutMs: 20000, guardTimeoutMs: 500, ledgerWriteMs: 2000 }) // 25000
 */
export function worstSettleMs(
  bounds: Pick<PaidCallBounds, 'settleTimeoutMs' | 'guardTimeoutMs' | 'ledgerWriteMs'>,
): number {
  return bounds.settleTimeoutMs + 2 * (bounds.guardTimeoutMs ?? 0) + 2 * (bounds.ledgerWriteMs ?? 0)
}

/**
 * The longest a call holds its settlement ledger intent, in milliseconds: it is written as the
 * run of a verified payment starts (src/payment/gate.ts), so the wait for a worker, the run and
 * the settlement ({@link worstSettleMs}).
 *
 * @example worstIntentHoldMs({ facilitatorTimeoutMs: 4000, settleTimeoutMs: 20000, workers: 2, queueLimit: 4, timeoutMs: 2000 })
 * // 26000 = 4000 + 2000 + 20000 (two budgets of queue wait, the run, the settle)
 */
export function worstIntentHoldMs(
  bounds: Pick<
    PaidCallBounds,
    'workers' | 'queueLimit' | 'timeoutMs' | 'settleTimeoutMs' | 'guardTimeoutMs' | 'ledgerWriteMs'
  >,
): number {
  return worstQueueWaitMs(bounds) + bounds.timeoutMs + worstSettleMs(bounds)
}

/**
 * The longest a paid call can take between receiving its payment and the end of its settlement,
 * in milliseconds: the input check on the free lane, then, when that lane could not make it, on
 * the paid lane (each a wait for a checker thread and the check, TOOL_TIMEOUT_MS each), the
 * guard's read of the payment before that (2 × REDIS_TIMEOUT_MS with Redis) and the claims of its
 * two keys (2 × 2 × REDIS_TIMEOUT_MS), verify (once, FACILITATOR_TIMEOUT_MS for each facilitator
 * it may try), the wait for a worker (its queue deadline, `max(1, ceil(TOOL_QUEUE_LIMIT /
 * TOOL_WORKERS))` budgets), the run (TOOL_TIMEOUT_MS) and the settlement ({@link worstSettleMs}).
 * The gate does not wait for the `verified` telemetry write, and writes `settled` after the
 * settlement: neither counts.
 *
 * @example
 * worstPaidCallMs({ facilitatorTimeoutMs: 4000, settleTimeoutMs: 20000, workers: 2, queueLimit: 4, timeoutMs: 2000 })
 * // 38000 = 4 × 2000 + 4000 + 4000 + 2000 + 20000
 */
export function worstPaidCallMs(bounds: Omit<PaidCallBounds, 'maxTimeoutSeconds'>): number {
  return (
    4 * bounds.timeoutMs +
    6 * (bounds.guardTimeoutMs ?? 0) +
    verifyAttempts(bounds) * bounds.facilitatorTimeoutMs +
    worstQueueWaitMs(bounds) +
    bounds.timeoutMs +
    worstSettleMs(bounds)
  )
}

/**
 * Refuses a configuration under which a paid call could outlive its payment: the worst case of
 * {@link worstPaidCallMs} must be at most half of `maxTimeoutSeconds`, leaving the other half to
 * the client (signing, the network) and to the chain. A call whose EIP-3009 authorization expires
 * before settle is verified, run and then never paid.
 *
 * @throws {Error} naming the variables and the numbers, when the worst case is longer
 */
export function assertPaidCallBudget(bounds: PaidCallBounds): void {
  const worst = worstPaidCallMs(bounds)
  const limit = (bounds.maxTimeoutSeconds * 1000) / 2
  if (worst <= limit) return
  const rounds = Math.max(1, Math.ceil(bounds.queueLimit / bounds.workers))
  const redis = bounds.guardTimeoutMs ?? 0
  const k = verifyAttempts(bounds)
  const verify =
    k === 1
      ? `verify FACILITATOR_TIMEOUT_MS (${bounds.facilitatorTimeoutMs})`
      : `verify on up to ${k} facilitators ${k} × FACILITATOR_TIMEOUT_MS (${k * bounds.facilitatorTimeoutMs})`
  throw new Error(
    `A paid call could outlive its payment: the input check on the free lane then the paid lane, each a wait for a checker thread and the check, 4 × TOOL_TIMEOUT_MS (${4 * bounds.timeoutMs})` +
      `${redis ? ` + the guard's read and claims 6 × REDIS_TIMEOUT_MS (${6 * redis})` : ''}` +
      ` + ${verify}` +
      ` + the wait for a worker max(1, ceil(TOOL_QUEUE_LIMIT ${bounds.queueLimit} / TOOL_WORKERS ${bounds.workers})) × ` +
      `TOOL_TIMEOUT_MS ${bounds.timeoutMs} (${rounds * bounds.timeoutMs}) + the run TOOL_TIMEOUT_MS (${bounds.timeoutMs})` +
      ` + settle and its one pending retry FACILITATOR_SETTLE_TIMEOUT_MS (${bounds.settleTimeoutMs})` +
      `${redis ? ` + the guard's writes after it 2 × REDIS_TIMEOUT_MS (${2 * redis})` : ''}` +
      `${bounds.ledgerWriteMs ? ` + the settlement ledger's intent and outcome 2 × ${bounds.ledgerWriteMs}` : ''}` +
      ` = ${worst} ms, more than half of the ${bounds.maxTimeoutSeconds} s a payment stays valid (${limit} ms). ` +
      `Lower FACILITATOR_SETTLE_TIMEOUT_MS, FACILITATOR_TIMEOUT_MS, TOOL_TIMEOUT_MS, TOOL_QUEUE_LIMIT or REDIS_TIMEOUT_MS, or raise TOOL_WORKERS${k > 1 ? ', or list fewer facilitators in FACILITATOR_URL' : ''}.`,
  )
}
