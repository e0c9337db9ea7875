import type { SettleResponse } from '@x402/core/types'
import { logger } from '../logger.js'
import type { NotLandedReason } from '../settlement/types.js'
import { settlementEventId } from '../telemetry/event-row.js'
import type { LedgerDecision } from '../telemetry/ledger.js'
import type { Answer, GateParts, PaidContext } from './call.js'
import { type CallRecords, callRecords } from './claim.js'
import {
  FacilitatorUnavailableError,
  PaymentConflictError,
  PaymentIdentifierConflictError,
  PaymentInProgressError,
  PaymentRequiredError,
  SETTLEMENT_RETRY_AFTER_SECONDS,
  SettlementUnknownError,
} from './errors.js'
import { type GuardRecord, sameCall } from './guard.js'
import { decideIntent, judgeCall, writeIntent } from './intent.js'
import { runTool } from './run.js'
import { doubtRecord, settleCall } from './settle.js'
import { verdictOf } from './verify.js'
import { paysByVoucher } from './voucher.js'
import { CUMULATIVE_MISMATCH } from './voucher-shape.js'

/**
 * The replay policy: answers a call whose payment or `payment-identifier` id the guard holds. The
 * holder's record is answered for only to its payer: a request presenting the very payment of the
 * record (same authorization and signature), or one whose own payment verifies (verify, never
 * settle) to the same payer under the record's id. A copy of the record's own authorization with
 * another signature is 409 `payment_conflict`; anyone else gets 409 `payment_identifier_conflict`
 * whatever the tool and input, or 409 `payment_in_progress` while the record is pending, so that
 * nothing is learnt about the call that holds the id. Then, by the record's state:
 * - `settled`: the same call is replayed (the tool runs again, nothing is verified or settled), at
 *   most `replayLimit` times in all; another call is `duplicate_settlement`;
 * - `pending`: `payment_in_progress`, or `duplicate_settlement` for another call;
 * - `spent`: `duplicate_settlement` (its settlement failed);
 * - `unknown`: the very payment, for the same call, is answered from the record before its
 *   Retry-After, else judged on chain or settled again ({@link resettle}).
 *
 * @throws the refusals above; what {@link resettle} throws
 * @example const answer = await answerHeld(parts, ctx, held.key, held.record)
 */
export async function answerHeld(
  parts: GateParts,
  ctx: PaidContext,
  key: string,
  record: GuardRecord,
): Promise<Answer> {
  const { identity } = ctx.presented
  const samePayment = record.payment === identity.key && record.proof === identity.proof
  if (!samePayment && key === identity.key) throw new PaymentConflictError()
  if (!samePayment) {
    if (record.state === 'pending') throw inProgress()
    const verdict = await verdictOf(parts, ctx)
    const payer = verdict.valid && verdict.payer ? parts.payerHash(verdict.payer) : undefined
    if (!payer || payer !== record.payer) throw new PaymentIdentifierConflictError()
  }
  const same = sameCall(record.call, ctx.fp)
  switch (record.state) {
    case 'settled':
      if (!same) return duplicate(ctx, 'already paid for a different call (tool or input)')
      return replaySettled(parts, ctx, record)
    case 'pending':
      if (same) throw inProgress()
      return duplicate(ctx, 'is being used for a different call (tool or input) right now')
    case 'spent':
      return duplicate(ctx, 'was already sent to settlement, which failed')
    case 'unknown':
      if (!same) return duplicate(ctx, 'already paid for a different call (tool or input)')
      if (!samePayment) {
        throw new SettlementUnknownError(
          'An earlier payment under this payment-identifier id was sent to settlement with an unknown outcome; retry with that same payment to settle it, not a new one',
          retryAfter(record, parts.now()),
        )
      }
      return resettle(parts, ctx, key, record)
  }
}

/** A settled call answered again: the tool runs again on the same input; nothing is settled. */
async function replaySettled(
  parts: GateParts,
  ctx: PaidContext,
  record: GuardRecord,
): Promise<Answer> {
  const count = await parts.guard.countReplay(record.payment, ctx.retentionMs)
  if (count > parts.replayLimit) {
    return duplicate(
      ctx,
      `was already answered ${parts.replayLimit} more times (REPLAY_LIMIT): its replays are used up`,
    )
  }
  // Deterministic tools: the same tool and input give the same result. A failure here
  // (overloaded, shutting down) charges nothing more.
  const nowSeconds = parts.env.nowSeconds()
  const result = await ctx.admission.run(ctx.call.tool, ctx.checked, nowSeconds)
  ctx.outcome.replayed = true
  logger.info({ tool: ctx.call.tool.id, replay: count }, 'paid call replayed')
  return { result, nowSeconds, settlement: record.settlement as SettleResponse, replayed: true }
}

/**
 * Retries the settlement of a payment in doubt. Before the Retry-After its payer was given
 * (`record.retryAt`), the record answers: `settlement_unknown` with the seconds that remain,
 * nothing run, nobody asked, except that a judge covering the rail is asked once (a transfer
 * whose answer was lost has usually landed by then). Otherwise it takes the record back
 * atomically (one retry at a time) and asks the chain first when a judge covers the rail:
 * - `landed`: the payment is settled (record and ledger), the tool runs again and the call is
 *   answered with the landed transaction ({@link deliverLanded});
 * - `not_landed`: the payment is freed and the call refused, nothing charged ({@link freeNotLanded});
 * - `undecided`, or no judge: the tool runs again and the facilitator is asked to settle the same
 *   payment again. While the outcome stays unknown the record stays `unknown` (the first attempt
 *   may have landed) with a new Retry-After: it is never freed. With a judge, a refusal of the
 *   facilitator leaves it so too (the first attempt may be pending, or have landed): only the
 *   chain decides it.
 *
 * @throws {PaymentInProgressError} another retry holds it
 * @throws {PaymentRequiredError} `settlement_failed`: it can never land (canceled, expired, its
 *   nonce used by another authorization), or, without a judge, the facilitator refused it
 * @throws {SettlementUnknownError} still unknown, or the facilitator could not be reached
 */
async function resettle(
  parts: GateParts,
  ctx: PaidContext,
  key: string,
  record: GuardRecord,
): Promise<Answer> {
  const early = record.retryAt !== undefined && parts.now() < record.retryAt - RETRY_AFTER_SLACK_MS
  if (early && (record.judged || !judgeCovers(parts, ctx))) throw stillInDoubt(record, parts.now())
  if (!(await parts.guard.reclaim(key, record.proof, { ...record, state: 'pending' }))) {
    throw inProgress()
  }
  const records = callRecords(parts.guard, ctx.keys, {
    key: ctx.presented.identity.key,
    ms: ctx.retentionMs,
  })
  // Never free a payment that may have moved: back to `unknown` (as the exit finds it).
  let restore: GuardRecord = { ...record, state: 'unknown' }
  ctx.outcome.claim = { put: (r) => records.put(r), release: () => records.put(restore) }
  const verdict = await judgeCall(parts, ctx)
  if (verdict?.kind === 'landed') return deliverLanded(parts, ctx, record, verdict.transaction)
  if (verdict?.kind === 'not_landed') return freeNotLanded(parts, ctx, records, verdict.reason)
  if (verdict) logger.info({ why: verdict.why }, 'settlement in doubt still undecided on chain')
  if (early) {
    // Its one look before Retry-After: the next ones wait for it.
    restore = { ...record, state: 'unknown', judged: true }
    throw stillInDoubt(record, parts.now())
  }
  const ran = await runTool(parts, ctx)
  try {
    const attempt = { retry: true, judged: verdict !== undefined }
    return { ...ran, settlement: await settleCall(parts, ctx, record.payer, attempt) }
  } catch (error) {
    if (error instanceof FacilitatorUnavailableError) {
      restore = doubtRecord(record, parts.now())
      throw new SettlementUnknownError()
    }
    throw error
  }
}

/**
 * How early a retry may come and still count as after its Retry-After, in milliseconds: a client's
 * timer, and the clocks of the instances that share the guard, may be off by that much.
 */
const RETRY_AFTER_SLACK_MS = 1_000

/** Whether a chain judge covers the call's rail (a question is asked of it on a retry). */
function judgeCovers(parts: GateParts, ctx: PaidContext): boolean {
  return (
    parts.questionOf !== undefined && parts.judge?.covers(ctx.presented.matched.network) === true
  )
}

/** Seconds until a record in doubt's Retry-After, at least 1 (the default for an older record). */
function retryAfter(record: GuardRecord, nowMs: number): number {
  if (record.retryAt === undefined) return SETTLEMENT_RETRY_AFTER_SECONDS
  return Math.max(1, Math.ceil((record.retryAt - nowMs) / 1000))
}

/** The answer of a payment still in doubt, read from its record. */
function stillInDoubt(record: GuardRecord, nowMs: number): SettlementUnknownError {
  return new SettlementUnknownError(
    'The settlement of this payment is still in doubt: it may have moved. Nothing more was run or charged; retry the same payment for the same input after Retry-After to get the result once it lands',
    retryAfter(record, nowMs),
  )
}

/**
 * A payment in doubt that landed: recorded `settled` (guard and ledger; counted in telemetry
 * unless the resolver decided it first) before the tool runs again, so that a run that fails
 * (overloaded, shutting down) leaves a settled payment, which the next retry replays.
 */
async function deliverLanded(
  parts: GateParts,
  ctx: PaidContext,
  record: GuardRecord,
  transaction: string,
): Promise<Answer> {
  const { identity, matched } = ctx.presented
  const settlement: SettleResponse = { success: true, transaction, network: matched.network }
  ctx.outcome.settle = 'settled'
  ctx.outcome.settlement = settlement
  await countOnce(parts, ctx, 'settled', { outcome: 'landed', transaction })
  await ctx.outcome.claim?.put({
    call: ctx.fp,
    payment: identity.key,
    proof: identity.proof,
    ...(record.payer ? { payer: record.payer } : {}),
    state: 'settled',
    settlement,
  })
  logger.info({ tool: ctx.call.tool.id, network: matched.network }, 'settlement in doubt landed')
  const nowSeconds = parts.env.nowSeconds()
  const result = await ctx.admission.run(ctx.call.tool, ctx.checked, nowSeconds)
  return { result, nowSeconds, settlement }
}

/** Why a payment can never land, as the refusal says it. */
const NOT_LANDED: Record<NotLandedReason, string> = {
  canceled: 'authorization canceled',
  expired: 'authorization expired',
  nonce_used: "authorization's nonce used by another transfer of the payer",
}

/**
 * A payment in doubt that can never land: nothing was charged, so its keys are freed (a canceled,
 * expired or used authorization presented again fails at verify; there is nothing to settle
 * again) and the call is refused. Counted `settle_failed` unless the resolver decided it first.
 */
async function freeNotLanded(
  parts: GateParts,
  ctx: PaidContext,
  records: CallRecords,
  reason: NotLandedReason,
): Promise<never> {
  ctx.outcome.settle = 'failed'
  await countOnce(parts, ctx, 'settle_failed', { outcome: 'not_landed' })
  await records.release()
  const errorReason = 'settlement_not_landed'
  const settlement: SettleResponse = {
    success: false,
    errorReason,
    transaction: '',
    network: ctx.presented.matched.network,
  }
  ctx.outcome.settlement = settlement
  throw new PaymentRequiredError(
    'settlement_failed',
    `The earlier settlement of this payment never landed on chain (${NOT_LANDED[reason]}): nothing was charged and the result is withheld; sign a new payment`,
    await ctx.offer.refusal(errorReason),
    { settlement },
  )
}

/**
 * Makes the call the one that counts its payment's outcome (its event under the payment's event
 * id, then the ledger's decision, at the exit), unless the ledger says it was decided already
 * (by the resolver, which counted it). The intent is written first: a call whose first write
 * failed still gets its row.
 */
async function countOnce(
  parts: GateParts,
  ctx: PaidContext,
  event: 'settled' | 'settle_failed',
  decision: Omit<LedgerDecision, 'at'>,
): Promise<void> {
  const { outcome } = ctx
  if (!(await writeIntent(parts, ctx))) return
  const key = ctx.presented.identity.key
  const stored = await parts.ledger?.get(key).catch(() => undefined)
  if (stored?.outcome) {
    outcome.count = false
    return
  }
  outcome.eventId = settlementEventId(key, event)
  outcome.decide = () => decideIntent(parts, ctx, decision)
}

/** Refuses a payment already used: 402 `duplicate_settlement`, saying why. */
async function duplicate(ctx: PaidContext, why: string): Promise<never> {
  if (paysByVoucher(ctx)) {
    // A voucher behind its channel (a payer that lost its record and rebuilt it from the chain):
    // the corrective PaymentRequired carries the channel's state, from which the SDK's client
    // resyncs and signs the next voucher instead of failing.
    throw new PaymentRequiredError(
      'duplicate_settlement',
      `This voucher ${why}: its cumulative amount is behind the channel's; sign one on the channel's charged amount (its state is in the PaymentRequired)`,
      await ctx.offer.refusal(CUMULATIVE_MISMATCH, ctx.presented.payment),
    )
  }
  throw new PaymentRequiredError(
    'duplicate_settlement',
    `This payment ${why}; sign a new one`,
    await ctx.offer.refusal('duplicate_settlement'),
  )
}

function inProgress(): PaymentInProgressError {
  return new PaymentInProgressError(
    'This payment is being processed by another request; retry after Retry-After for its result',
  )
}
