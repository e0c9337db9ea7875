import type { SettleResponse } from '@x402/core/types'
import { describeError, logger } from '../logger.js'
import type { CallRecords } from './claim.js'
import { settledCredit } from './quota.js'
import type { PaidCall, PaymentEvent, PaymentNote, PaymentObserver } from './types.js'

/** What the steps of one paid call tell the exit, as they go. */
export interface CallOutcome {
  readonly call: PaidCall
  /**
   * Rate-limit points taken before its work: given back once its payment verifies, taken again
   * if it then ends without a settlement.
   */
  charged: number
  /** Points given back at verify (`charged`), until the exit decides whether they stay given. */
  refunded?: number
  /**
   * The rail's CAIP-2 network, the amount (atomic USDC) and the scheme, once the payment matched
   * one (a channel payment is `batch-settlement`; absent: `exact`).
   */
  rail?: { network: string; amount: string; scheme?: 'exact' | 'batch-settlement' }
  /** The keys this call claimed: freed at the exit unless its payment may have moved. */
  claim?: CallRecords
  /** Set by a successful verify: the payer address (for the telemetry event only). */
  verified?: { payer: string | undefined }
  /** What became of its settlement, once one was attempted. */
  settle?: 'settled' | 'failed' | 'unknown' | 'unsent'
  settlement?: SettleResponse
  /** A settled call answered again. */
  replayed?: boolean
  /**
   * False when the event of its settlement is not this call's to emit: the settlement ledger
   * says another party (the resolver, another retry) decided and counted it, or it is in doubt
   * with its intent in the ledger, and whoever decides it counts it.
   */
  count?: false
  /** The id of its settlement's event (`settlementEventId`), when it has a ledger intent. */
  eventId?: string
  /**
   * The ledger outcome of its intent, carried by its settlement's event (`decides`) so that an
   * observer that can (telemetry) writes both in one transaction.
   */
  decides?: NonNullable<PaymentEvent['decides']>
  /**
   * The ledger write of its outcome on its own, run at the exit when the event did not carry it
   * (no event is this call's to emit, or the observer did not write it): after the event, so that
   * a crash between the two leaves the intent undecided, and the resolver records the event again
   * under the same id, which the store keeps once.
   */
  decide?: () => Promise<unknown>
  /**
   * Gives back what its verify reserved (a channel's pending request) when the call ends
   * without a settlement: run at the exit of a call that failed before settling.
   */
  cancel?: () => Promise<void>
}

/** Options of {@link createOutcomes}. */
export interface OutcomeOptions {
  observer?: PaymentObserver
  onNote?: (note: PaymentNote) => void
}

/** The exit of every paid call, see {@link createOutcomes}. */
export interface Outcomes {
  /** A new call's outcome, before any step. */
  open(call: PaidCall, charged?: number): CallOutcome
  /**
   * A verify succeeded: the call's rate-limit points are given back now; its `verified` event is
   * emitted at the exit, beside its outcome's (one telemetry transaction for both).
   */
  verified(outcome: CallOutcome, payer: string | undefined): void
  /**
   * Records what became of the call, once, at its exit: frees its claim unless its payment was
   * sent to settlement; its `verified` event (not awaited) if it verified, then one payment event
   * in the same turn, so that both go in one telemetry transaction (`settled`, awaited before the
   * result is released;
   * `settle_failed`; `tool_failed_unsettled`; none when the ledger leaves it to another party,
   * see {@link CallOutcome.count}); one note for the operators' metrics (a refusal with
   * its code, a failed verify, a settlement in doubt, a replay); the rate-limit points: a settled
   * payment's credit ({@link settledCredit}, and its own points if no verify gave them back), or
   * the points given back at verify taken again from a call that did not settle. Never throws.
   *
   * @param error - what the call was answered with, when it failed
   */
  close(outcome: CallOutcome, error?: unknown): Promise<void>
}

/**
 * The one place where a paid call's bookkeeping is done: the steps only say what happened
 * ({@link CallOutcome}), and the exit records it, so that every call is counted once, however it
 * ended.
 *
 * @example
 * const outcomes = createOutcomes({ observer, onNote })
 * const outcome = outcomes.open(call)
 * try { … } catch (error) { await outcomes.close(outcome, error); throw error }
 */
export function createOutcomes(options: OutcomeOptions): Outcomes {
  /** @returns true when the observer wrote the event's `decides` outcome with it */
  const emit = async (event: PaymentEvent): Promise<boolean> => {
    try {
      return (await options.observer?.(event)) === true
    } catch (error) {
      // Telemetry never fails a paid call.
      logger.error({ err: describeError(error), outcome: event.outcome }, 'payment observer failed')
      return false
    }
  }
  const note = (o: CallOutcome, outcome: PaymentNote['outcome'], code?: string) =>
    options.onNote?.({
      tool: o.call.tool.id,
      transport: o.call.transport,
      outcome,
      ...(o.rail ? { network: o.rail.network } : {}),
      ...(code ? { code } : {}),
    })
  const event = (o: CallOutcome, outcome: PaymentEvent['outcome'], payer?: string) => {
    const rail = o.rail ?? { network: 'unknown', amount: '0' }
    const settles = outcome === 'settled' || outcome === 'settle_failed'
    return emit({
      tool: o.call.tool.id,
      transport: o.call.transport,
      network: rail.network,
      amount: rail.amount,
      ...(rail.scheme === 'batch-settlement' ? { scheme: rail.scheme } : {}),
      outcome,
      ...(payer ? { payer } : {}),
      ...(settles && o.eventId ? { id: o.eventId } : {}),
      ...(settles && o.eventId && o.decides ? { decides: o.decides } : {}),
    })
  }
  /** The settlement's event (unless another party counts it), then its ledger outcome if unwritten. */
  const settlement = async (
    o: CallOutcome,
    outcome: 'settled' | 'settle_failed',
    payer?: string,
  ) => {
    const written = o.count !== false && (await event(o, outcome, payer))
    if (!written) await o.decide?.()
  }

  return {
    open: (call, charged = 0) => ({ call, charged }),
    verified(o, payer) {
      o.verified = { payer }
      // The call's points come back at once rather than at the exit: a payer's calls in flight
      // hold none of its quota. They are taken again if it does not settle (see close).
      if (o.charged > 0 && o.refunded === undefined) {
        o.refunded = o.charged
        o.call.quota?.refund(o.charged)
      }
    },
    async close(o, error) {
      const sent = o.settle === 'settled' || o.settle === 'failed' || o.settle === 'unknown'
      if (error !== undefined && !sent) {
        await o.claim?.release()
        await o.cancel?.()
      }
      const payer = o.settlement?.payer ?? o.verified?.payer
      // Emitted with the event below in the same turn: the store's write queue commits them together.
      if (o.verified) void event(o, 'verified', o.verified.payer)
      if (o.settle === 'settled') {
        // A channel deposit's settlement moves the deposit, of which the call is charged the price.
        const amount = o.settlement?.amount
        if (amount && o.rail && o.rail.scheme !== 'batch-settlement') o.rail = { ...o.rail, amount }
        await settlement(o, 'settled', payer)
        o.call.quota?.refund(o.charged - (o.refunded ?? 0) + settledCredit(o.charged))
        return
      }
      // Verified and not settled (a tool error or timeout, a wait past the queue deadline, a
      // settlement refused or in doubt): no money is known to have moved, and the claim of a
      // tool error is freed, so the same payment could run again; it pays as a call without money.
      if (o.refunded) o.call.quota?.takeBack(o.refunded)
      if (o.replayed && error === undefined) return note(o, 'replayed')
      if (o.settle) await settlement(o, 'settle_failed', payer)
      else if (o.verified) await event(o, 'tool_failed_unsettled', payer)
      const code = (error as { code?: unknown } | undefined)?.code
      if (o.settle === 'unknown') note(o, 'settle_unknown')
      else if (o.verified || o.settle) return
      else if (code === 'payment_verification_failed') note(o, 'verify_failed', reasonOf(error))
      else note(o, 'refused', typeof code === 'string' ? code : 'internal_error')
    },
  }
}

/** The facilitator's reason of a failed verify: the `error` of the PaymentRequired it answers. */
function reasonOf(error: unknown): string | undefined {
  const required = (error as { paymentRequired?: { error?: unknown } }).paymentRequired
  return typeof required?.error === 'string' ? required.error : undefined
}
