import { describeError, logger } from '../logger.js'
import type { SettlementQuestion, SettlementVerdict } from '../settlement/types.js'
import type { LedgerDecision } from '../telemetry/ledger.js'
import type { GateParts, PaidContext } from './call.js'
import { CLOCK_SKEW_SECONDS } from './payment-shape.js'

/**
 * Writes the call's settlement intent to the ledger (durable when this resolves true), held by
 * the call for `parts.ledgerHoldMs` so that no resolver judges it while its run or settle is in
 * flight.
 * A ledger that cannot commit does not stop the call (telemetry never fails a paid call): the
 * settle goes on without its intent, as before the ledger existed, and the failure is logged.
 *
 * @returns true when the intent is committed; false without a ledger, for a scheme other than
 *   `exact` (a channel deposit), or when the write failed
 * @example if (await writeIntent(parts, ctx)) outcome.count = false // decided later
 */
export async function writeIntent(parts: GateParts, ctx: PaidContext): Promise<boolean> {
  const { ledger } = parts
  const { presented, call } = ctx
  // The ledger is the chain judge's: a channel deposit is not judged, its retry asks the facilitator.
  if (!ledger || presented.matched.scheme !== 'exact') return false
  const now = parts.now()
  try {
    await ledger.intend(
      {
        key: presented.identity.key,
        network: presented.matched.network,
        amount: presented.matched.amount,
        tool: call.tool.id,
        transport: call.transport,
        createdAt: now,
        expiresAt: (presented.validUntil + CLOCK_SKEW_SECONDS) * 1000,
        question: questionJson(parts, ctx),
      },
      now + parts.ledgerHoldMs,
    )
    return true
  } catch (error) {
    logger.error({ err: describeError(error) }, 'settlement ledger: intent not written')
    return false
  }
}

/**
 * Writes the outcome of the call's intent.
 *
 * @returns true when this call decided it (its telemetry event is this call's to emit), false
 *   when it was decided already, undefined without a ledger or when the write failed
 */
export async function decideIntent(
  parts: GateParts,
  ctx: PaidContext,
  decision: Omit<LedgerDecision, 'at'>,
): Promise<boolean | undefined> {
  if (!parts.ledger) return undefined
  try {
    return await parts.ledger.decide(ctx.presented.identity.key, { ...decision, at: parts.now() })
  } catch (error) {
    logger.error(
      { err: describeError(error), outcome: decision.outcome },
      'settlement ledger: outcome not written',
    )
    return undefined
  }
}

/** Deletes the call's intent: its settle certainly never reached a facilitator. */
export async function forgetIntent(parts: GateParts, ctx: PaidContext): Promise<void> {
  try {
    await parts.ledger?.forget(ctx.presented.identity.key)
  } catch (error) {
    logger.error({ err: describeError(error) }, 'settlement ledger: intent not forgotten')
  }
}

/**
 * What the chain says of the call's payment, when a judge covers its rail and a question can be
 * had for it: the ledger's (asked as of the payment's first presentation, which the Solana judge
 * reads its history back to), else a new one. Undefined otherwise (the facilitator is asked).
 *
 * @example const verdict = await judgeCall(parts, ctx) // { kind: 'landed', transaction: '0x…' }
 */
export async function judgeCall(
  parts: GateParts,
  ctx: PaidContext,
): Promise<SettlementVerdict | undefined> {
  const { judge, questionOf, ledger } = parts
  const { payment, matched, identity } = ctx.presented
  if (!judge || !questionOf || !judge.covers(matched.network)) return undefined
  try {
    const stored = await ledger?.get(identity.key).catch(() => undefined)
    const question = stored?.question
      ? (JSON.parse(stored.question) as SettlementQuestion)
      : questionOf(payment, matched)
    if (!question) return undefined
    return await judge.judge(question)
  } catch (error) {
    // The judge never throws by contract; a fault of ours is a question left undecided.
    logger.error({ err: describeError(error) }, 'settlement judge failed')
    return { kind: 'undecided', why: 'judge_error' }
  }
}

/** The settlement question of the call as JSON (no payer address, no payload), or null. */
function questionJson(parts: GateParts, ctx: PaidContext): string | null {
  try {
    const question = parts.questionOf?.(ctx.presented.payment, ctx.presented.matched)
    return question ? JSON.stringify(question) : null
  } catch (error) {
    logger.warn({ err: describeError(error) }, 'settlement ledger: no question for this payment')
    return null
  }
}
