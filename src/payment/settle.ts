import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types'
import { SettleError } from '@x402/core/types'
import { logSafe, marksDown, neverReached } from '../facilitators/failures.js'
import type { FacilitatorLink, LiveState } from '../facilitators/link.js'
import { logger } from '../logger.js'
import { settlementEventId } from '../telemetry/event-row.js'
import type { GateParts, PaidContext } from './call.js'
import {
  FacilitatorUnavailableError,
  PaymentRequiredError,
  SETTLEMENT_RETRY_AFTER_SECONDS,
  SettlementUnknownError,
} from './errors.js'
import type { GuardRecord } from './guard.js'
import { decideIntent, forgetIntent, writeIntent } from './intent.js'

/**
 * What became of a settlement:
 * - `settled`: the facilitator settled it;
 * - `failed`: the facilitator answered that it could not settle it (its reason, with only the
 *   fields a client may see: {@link publicSettlement});
 * - `unknown`: the request was sent and its outcome is unknown: a timeout, a facilitator failure
 *   (5xx) after it received the request, or `settlement_pending` still after the SDK's one retry.
 *   The payment may have moved;
 * - `unsent`: the facilitator certainly never received it (connection refused, no such host): the
 *   payment did not move and may be presented again.
 */
export type SettleOutcome =
  | { kind: 'settled'; settlement: SettleResponse }
  | { kind: 'failed'; settlement: SettleResponse }
  | { kind: 'unknown' }
  | { kind: 'unsent' }

/** The SDK's reason for a settlement broadcast but not yet confirmed (x402 `exact`). */
const SETTLEMENT_PENDING = 'settlement_pending'

/**
 * Settles a payment through the facilitator: each request bounded by FACILITATOR_TIMEOUT_MS, a
 * `settlement_pending` answer retried once by the SDK (`settleWithPendingRetry`), so at most
 * twice that. Never throws.
 *
 * @example
 * const outcome = await settlePayment(link, state, payment, matched, extensions)
 * if (outcome.kind === 'settled') release(outcome.settlement)
 */
export async function settlePayment(
  link: FacilitatorLink,
  state: LiveState,
  payment: PaymentPayload,
  requirements: PaymentRequirements,
  extensions: Record<string, unknown>,
): Promise<SettleOutcome> {
  let response: SettleResponse
  try {
    response = await state.server.settlePayment(payment, requirements, extensions)
  } catch (error) {
    if (error instanceof SettleError && error.statusCode < 500) {
      link.observe()
      if (error.errorReason === SETTLEMENT_PENDING) return { kind: 'unknown' }
      return {
        kind: 'failed',
        settlement: publicSettlement({
          success: false,
          errorReason: error.errorReason ?? 'settlement_failed',
          transaction: error.transaction ?? '',
          network: requirements.network,
        }),
      }
    }
    if (marksDown(error)) link.observe(error)
    const unsent = neverReached(error)
    logger.warn(
      { ...logSafe(error), outcome: unsent ? 'unsent' : 'unknown' },
      'facilitator settle failed',
    )
    return unsent ? { kind: 'unsent' } : { kind: 'unknown' }
  }
  link.observe()
  if (response.success) return { kind: 'settled', settlement: response }
  if (response.errorReason === SETTLEMENT_PENDING) return { kind: 'unknown' }
  return { kind: 'failed', settlement: publicSettlement(response) }
}

/**
 * A failed SettleResponse as a client may see it: `success`, `errorReason`, `transaction` and
 * `network` only. The facilitator's free-text `errorMessage` (raw RPC errors, which can name RPC
 * URLs) and anything else it added stay here; `payer` is never echoed.
 *
 * @example publicSettlement({ success: false, errorReason: 'insufficient_funds', errorMessage: 'rpc https://…', transaction: '', network: 'eip155:8453' })
 * // { success: false, errorReason: 'insufficient_funds', transaction: '', network: 'eip155:8453' }
 */
export function publicSettlement(response: SettleResponse): SettleResponse {
  return {
    success: false,
    ...(response.errorReason ? { errorReason: response.errorReason } : {}),
    transaction: response.transaction ?? '',
    network: response.network,
  }
}

/** How a settle step is attempted: {@link settleCall}. */
export interface SettleAttempt {
  /** A retry of a payment in doubt (replay.ts): its intent stays in the ledger whatever happens. */
  retry?: boolean
  /**
   * On a retry: a chain judge covers its rail (and could not decide it yet). A facilitator's
   * refusal then is no proof that nothing moved: the first attempt may be pending in the mempool,
   * or have landed (`invalid_exact_evm_nonce_already_used`, a blockhash already processed), so the
   * payment stays in doubt and only the judge decides it, on a later retry or in the resolver.
   */
  judged?: boolean
  /**
   * The call's intent, already being written ({@link writeIntent}, started beside the run so that
   * its commit adds no latency): awaited before the settle request leaves.
   */
  intent?: Promise<boolean>
}

/**
 * The record of a payment in doubt, whose payer is told to retry after
 * {@link SETTLEMENT_RETRY_AFTER_SECONDS}: `unknown`, with that moment as `retryAt`, not yet judged.
 *
 * @param nowMs - the payments' clock, in epoch milliseconds
 */
export function doubtRecord(record: GuardRecord, nowMs: number): GuardRecord {
  const { judged: _, ...rest } = record
  return { ...rest, state: 'unknown', retryAt: nowMs + SETTLEMENT_RETRY_AFTER_SECONDS * 1000 }
}

/**
 * The settle step of a call whose tool ran: commits the intent to the settlement ledger, asks the
 * facilitator to settle, records what became of the payment under every key of the call
 * (settled, with its SettleResponse for replays; spent; unknown) and in the ledger, and tells
 * the call's outcome. With an intent, its outcome's event carries the payment's event id and the
 * ledger is written after that event (at the exit), so that whoever records it (this call, a
 * retry, the resolver after a crash) it is stored once; an outcome in doubt is counted by whoever
 * decides it later.
 *
 * @param payer - the payer's keyed hash for the records, if known
 * @returns the SettleResponse of a settled payment
 * @throws {PaymentRequiredError} `settlement_failed`: the facilitator could not settle it; the
 *   result is withheld
 * @throws {SettlementUnknownError} it was sent and its outcome is unknown (on a judged retry,
 *   refused too: {@link SettleAttempt.judged}); the payment stays held, `unknown` with a
 *   Retry-After ({@link doubtRecord})
 * @throws {FacilitatorUnavailableError} it never reached a facilitator; the payment is freed
 * @example const settlement = await settleCall(parts, ctx, payer)
 */
export async function settleCall(
  parts: GateParts,
  ctx: PaidContext,
  payer: string | undefined,
  attempt: SettleAttempt = {},
): Promise<SettleResponse> {
  const { presented, offer, outcome } = ctx
  const intended = await (attempt.intent ?? writeIntent(parts, ctx))
  const key = presented.identity.key
  const answered = await settlePayment(
    parts.link,
    ctx.state,
    presented.payment,
    presented.matched,
    offer.extensions,
  )
  const settled = attempt.retry && attempt.judged ? leftToJudge(answered, ctx) : answered
  outcome.settle = settled.kind
  const base = {
    call: ctx.fp,
    payment: presented.identity.key,
    proof: presented.identity.proof,
    ...(payer ? { payer } : {}),
  }
  const records = outcome.claim
  switch (settled.kind) {
    case 'settled': {
      outcome.settlement = settled.settlement
      if (intended) {
        const { transaction } = settled.settlement
        outcome.eventId = settlementEventId(key, 'settled')
        outcome.decides = { key, decision: { outcome: 'settled', transaction, at: parts.now() } }
        outcome.decide = () => decideIntent(parts, ctx, { outcome: 'settled', transaction })
      }
      // The record for replays: fingerprint and SettleResponse, never the payer address.
      const { payer: _, ...recorded } = settled.settlement
      await records?.put({ ...base, state: 'settled', settlement: recorded })
      return settled.settlement
    }
    case 'failed': {
      outcome.settlement = settled.settlement
      if (intended) {
        outcome.eventId = settlementEventId(key, 'settle_failed')
        outcome.decides = { key, decision: { outcome: 'failed', at: parts.now() } }
        outcome.decide = () => decideIntent(parts, ctx, { outcome: 'failed' })
      }
      await records?.put({ ...base, state: 'spent' })
      const reason = settled.settlement.errorReason ?? 'settlement_failed'
      throw new PaymentRequiredError(
        'settlement_failed',
        `Settlement failed: ${reason}; the result is withheld`,
        await offer.refusal(reason),
        { settlement: settled.settlement },
      )
    }
    case 'unknown':
      if (intended) outcome.count = false
      await records?.put(doubtRecord({ ...base, state: 'unknown' }, parts.now()))
      throw new SettlementUnknownError()
    case 'unsent':
      if (attempt.retry && intended) outcome.count = false
      else if (intended) await forgetIntent(parts, ctx)
      // Nothing reached the facilitator: the payment did not move and may be sent again.
      throw new FacilitatorUnavailableError(
        'Payment facilitator is unavailable during settlement; the result is withheld and nothing was charged: retry the same payment',
      )
  }
}

/**
 * A retry's settle on a rail a chain judge covers: a refusal is logged (its reason only) and
 * taken as `unknown`, the payment left in doubt for the judge (see {@link SettleAttempt.judged}).
 */
function leftToJudge(settled: SettleOutcome, ctx: PaidContext): SettleOutcome {
  if (settled.kind !== 'failed') return settled
  logger.info(
    { reason: settled.settlement.errorReason, network: ctx.presented.matched.network },
    'facilitator refused a settlement in doubt: left to the chain judge',
  )
  return { kind: 'unknown' }
}
