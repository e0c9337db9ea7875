import type { Metrics } from './metrics.js'

// The gate's payment events and notes as counting reads them: the same shapes as PaymentEvent and
// PaymentNote in src/payment/, declared here so that the metrics import nothing of ours.

/** A payment event: `verified`, then exactly one outcome of the same call. */
export interface CountedPayment {
  tool: string
  transport: 'http' | 'mcp'
  /** CAIP-2 network of the rail used. */
  network: string
  /** Atomic USDC units. */
  amount: string
  outcome: 'verified' | 'settled' | 'settle_failed' | 'tool_failed_unsettled'
}

/** A paid request that is not a payment event: refused before verify, rejected, replayed or in doubt. */
export interface CountedNote {
  tool: string
  transport: 'http' | 'mcp'
  /** CAIP-2 network of the rail, when the payment matched one. */
  network?: string
  outcome: 'refused' | 'verify_failed' | 'replayed' | 'settle_unknown'
  /** The error code of a refusal, or the facilitator's reason of a failed verify. */
  code?: string
}

/**
 * Counts a payment event in `x402_payments_total`: every outcome but `verified`, so that a paid
 * call counts once, by how it ended; a settled one adds its amount to the revenue.
 *
 * @example
 * const observer: PaymentObserver = async (event) => countPayment(metrics, event)
 */
export function countPayment(
  metrics: Pick<Metrics, 'payment' | 'settledAtomic'>,
  event: CountedPayment,
): void {
  if (event.outcome === 'verified') return
  const { tool, network, transport, outcome } = event
  metrics.payment({ tool, network, transport, outcome })
  if (outcome === 'settled') metrics.settledAtomic(network, event.amount)
}

/**
 * Counts a note of the gate: refusals, failed verifies and replays. A settlement in doubt is
 * already counted by its `settle_failed` event; a note without a network counts as `unknown`.
 */
export function countNote(metrics: Pick<Metrics, 'payment'>, note: CountedNote): void {
  if (note.outcome === 'settle_unknown') return
  metrics.payment({
    tool: note.tool,
    network: note.network ?? 'unknown',
    transport: note.transport,
    outcome: note.outcome,
    ...(note.code ? { code: note.code } : {}),
  })
}
