import { worstQueueWaitMs } from '../runner/runner.js'
import { WRITE_TIMEOUT_MS } from '../telemetry/limits.js'

/** What bounds the duration of a paid call, in milliseconds (and seconds for the payment). */
export interface PaidCallBounds {
  /** FACILITATOR_TIMEOUT_MS: bounds verify, and settle. */
  facilitatorTimeoutMs: number
  /** TOOL_WORKERS */
  workers: number
  /** TOOL_QUEUE_LIMIT */
  queueLimit: number
  /** TOOL_TIMEOUT_MS */
  timeoutMs: number
  /** PaymentRequirements.maxTimeoutSeconds: how long the signed payment stays valid. */
  maxTimeoutSeconds: number
  /**
   * REDIS_TIMEOUT_MS when the guard is on Redis, else 0: the claim before verify waits at most
   * twice that (a connection not ready, then the command).
   */
  guardTimeoutMs?: number
  /**
   * Facilitators configured (FACILITATOR_URL), default 1: verify may try each in turn (failover),
   * each bounded by FACILITATOR_TIMEOUT_MS. A settle's attempts share one FACILITATOR_TIMEOUT_MS.
   */
  facilitators?: number
}

/** Facilitators verify may try in turn: at least one. */
const verifyAttempts = (bounds: { facilitators?: number }) => Math.max(1, bounds.facilitators ?? 1)

/**
 * The longest a paid call can take between receiving its payment and the end of its settlement,
 * in milliseconds: verify (FACILITATOR_TIMEOUT_MS per facilitator it may try), the `verified` telemetry write the gate awaits
 * (WRITE_TIMEOUT_MS, 2 s), the wait for a worker (its queue deadline,
 * `max(1, ceil(TOOL_QUEUE_LIMIT / TOOL_WORKERS))` budgets), the run (TOOL_TIMEOUT_MS) and settle
 * (FACILITATOR_TIMEOUT_MS), plus, with the guard on Redis, the claims of the payment's two keys
 * before verify (2 × 2 × REDIS_TIMEOUT_MS at worst).
 *
 * @example
 * worstPaidCallMs({ facilitatorTimeoutMs: 10000, workers: 2, queueLimit: 4, timeoutMs: 2000 })
 * // 28000 = 10000 + 2000 + 4000 + 2000 + 10000
 */
export function worstPaidCallMs(bounds: Omit<PaidCallBounds, 'maxTimeoutSeconds'>): number {
  return (
    (verifyAttempts(bounds) + 1) * bounds.facilitatorTimeoutMs +
    WRITE_TIMEOUT_MS +
    worstQueueWaitMs(bounds) +
    bounds.timeoutMs +
    4 * (bounds.guardTimeoutMs ?? 0)
  )
}

/**
 * Refuses a configuration under which a paid call could outlive its payment: the worst case of
 * {@link worstPaidCallMs} must be at most half of `maxTimeoutSeconds`, leaving the other half to
 * the client (signing, the network) and to the chain. A call whose EIP-3009 authorization expires
 * before settle is verified, run and then never paid (the case of issue 9).
 *
 * @throws {Error} naming the variables and the numbers, when the worst case is longer
 */
export function assertPaidCallBudget(bounds: PaidCallBounds): void {
  const worst = worstPaidCallMs(bounds)
  const limit = (bounds.maxTimeoutSeconds * 1000) / 2
  if (worst <= limit) return
  const rounds = Math.max(1, Math.ceil(bounds.queueLimit / bounds.workers))
  const k = verifyAttempts(bounds)
  const facilitatorPart =
    k === 1
      ? `verify and settle 2 × FACILITATOR_TIMEOUT_MS (${2 * bounds.facilitatorTimeoutMs})`
      : `verify on up to ${k} facilitators ${k} × FACILITATOR_TIMEOUT_MS (${k * bounds.facilitatorTimeoutMs}) + settle FACILITATOR_TIMEOUT_MS (${bounds.facilitatorTimeoutMs})`
  throw new Error(
    `A paid call could outlive its payment: ${facilitatorPart} + the telemetry write (${WRITE_TIMEOUT_MS}) + the wait ` +
      `for a worker max(1, ceil(TOOL_QUEUE_LIMIT ${bounds.queueLimit} / TOOL_WORKERS ${bounds.workers})) × ` +
      `TOOL_TIMEOUT_MS ${bounds.timeoutMs} (${rounds * bounds.timeoutMs}) + the run TOOL_TIMEOUT_MS ` +
      `(${bounds.timeoutMs})${bounds.guardTimeoutMs ? ` + the guard's claims 4 × REDIS_TIMEOUT_MS (${4 * bounds.guardTimeoutMs})` : ''} = ${worst} ms, more than half of the ${bounds.maxTimeoutSeconds} s a ` +
      `payment stays valid (${limit} ms). Lower FACILITATOR_TIMEOUT_MS, TOOL_TIMEOUT_MS, ` +
      `TOOL_QUEUE_LIMIT or REDIS_TIMEOUT_MS, or raise TOOL_WORKERS${k > 1 ? ', or list fewer facilitators in FACILITATOR_URL' : ''}.`,
  )
}
