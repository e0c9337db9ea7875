import type { PaymentRequirements } from '@x402/core/types'
import { systemEnv } from '../tools/types.js'
import type { Answer, GateParts, PaidContext } from './call.js'
import { claimCall } from './claim.js'
import { DUPLICATE_WINDOW_MS, idempotencyKey } from './guard.js'
import { checkInput } from './input.js'
import { forgetIntent, writeIntent } from './intent.js'
import { createOffers, unpaidRefusal } from './offer.js'
import { type CallOutcome, createOutcomes } from './outcome.js'
import { earnPaidLane, type PaidLane } from './paid-lane.js'
import { CLOCK_SKEW_SECONDS } from './payment-shape.js'
import { readPayment } from './presented.js'
import { chargeBefore } from './quota.js'
import { withReceipt } from './receipt.js'
import { refundChannel } from './refund.js'
import { answerHeld } from './replay.js'
import { runTool } from './run.js'
import {
  DEFAULT_LEDGER_HOLD_MS,
  DEFAULT_REPLAY_LIMIT,
  type PaidCall,
  type PaidResult,
  type PaymentGate,
  type PaymentGateOptions,
} from './types.js'
import { verifyCall } from './verify.js'
import { settleStepOf, voucherOf } from './voucher.js'

export { MAX_PAYMENT_BYTES } from './presented.js'
export type { ClientQuota } from './quota.js'
export * from './types.js'

/**
 * Creates the payment gate: the life of a paid call as the design tells it, one step module each
 * (offer, payment, input with the paid lane, claim, replay, verify, run, settle, outcome,
 * receipt).
 *
 * @example
 * const gate = createPaymentGate({ link, guard: createMemoryGuard(), runner, payerHash })
 * const { result, settlement } = await gate.execute({ tool, transport: 'http', source, payment, resource })
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const { link, runner } = options
  const now = options.now ?? Date.now
  const offerOf = createOffers(options.receipts)
  const parts = partsOf(options)

  async function execute(call: PaidCall): Promise<PaidResult> {
    if (!call.payment)
      throw await unpaidRefusal(call, await offerOf(await link.ready(), call), runner)
    const outcome = parts.outcomes.open(call)
    try {
      const paid = await pipeline(call, call.payment, outcome)
      await parts.outcomes.close(outcome)
      return paid
    } catch (error) {
      await parts.outcomes.close(outcome, error)
      throw error
    }
  }

  /** A call that presents a payment, step by step; its outcome is recorded at the exit. */
  async function pipeline(
    call: PaidCall,
    payment: NonNullable<PaidCall['payment']>,
    outcome: CallOutcome,
  ): Promise<PaidResult> {
    outcome.charged = await chargeBefore(call)
    const state = await link.ready()
    const offer = await offerOf(state, call)
    const presented = await readPayment(payment, state, offer, Math.floor(now() / 1000))
    outcome.rail = railOf(presented.matched)
    const read = { call, state, offer, presented, outcome }
    const { checked, lane } = await checkInput(runner, call, () => earnPaidLane(parts, read))
    const ctx = contextOf(parts, now(), { ...read, checked }, lane)
    const held = await claimCall(parts.guard, ctx)
    const answer = held ? await answerHeld(parts, ctx, held.key, held.record) : await pay(ctx)
    return delivered(parts, ctx, answer)
  }

  /**
   * A call whose keys are all its own: verify, run, settle (or charge its voucher). The ledger
   * intent of an `exact` payment that verified is written while its tool runs (it needs only the
   * payment's key and question), and deleted if the call ends before its settle. Not before
   * verify: a payment that fails it would cost two ledger writes.
   */
  async function pay(ctx: PaidContext): Promise<Answer> {
    const payer = await verifyCall(parts, ctx)
    const intent = ctx.presented.matched.scheme === 'exact' ? writeIntent(parts, ctx) : undefined
    try {
      const ran = await runTool(parts, ctx)
      const attempt = intent ? { intent } : {}
      return { ...ran, settlement: await settleStepOf(ctx)(parts, ctx, payer, attempt) }
    } catch (error) {
      // Before the exit frees the claim: a retry of the payment must find no stale intent.
      if (ctx.outcome.settle === undefined && intent && (await intent)) {
        await forgetIntent(parts, ctx)
      }
      throw error
    }
  }

  return {
    execute,
    refund: async (call) => refundChannel(link, offerOf, call, now() / 1000),
    link,
    runner,
  }
}

/** What a call's outcome records of the requirements its payment matched. */
function railOf(matched: PaymentRequirements): NonNullable<CallOutcome['rail']> {
  const { network, amount, scheme } = matched
  return { network, amount, ...(scheme === 'batch-settlement' ? { scheme } : {}) }
}

/** The parts the steps are built with, from the gate's options. */
function partsOf(options: PaymentGateOptions): GateParts {
  return {
    link: options.link,
    guard: options.guard,
    runner: options.runner,
    payerHash: options.payerHash,
    replayLimit: options.replayLimit ?? DEFAULT_REPLAY_LIMIT,
    env: options.env ?? systemEnv,
    canSettle: options.canSettle ?? (() => true),
    outcomes: createOutcomes({
      ...(options.observer ? { observer: options.observer } : {}),
      ...(options.onNote ? { onNote: options.onNote } : {}),
    }),
    ...(options.receipts ? { receipts: options.receipts } : {}),
    now: options.now ?? Date.now,
    ledgerHoldMs: options.ledgerHoldMs ?? DEFAULT_LEDGER_HOLD_MS,
    ...(options.ledger ? { ledger: options.ledger } : {}),
    ...(options.judge ? { judge: options.judge } : {}),
    ...(options.questionOf ? { questionOf: options.questionOf } : {}),
  }
}

/**
 * The shared state of a call whose payment is read and input checked, with its guard keys and
 * how long its payment stays on record; admits it to the pool (a full pool refuses it before
 * anything is verified; nothing is reserved), unless the paid lane it earned did.
 *
 * @param nowMs - the payments' clock, in epoch milliseconds
 * @param lane - the paid lane its payment earned, with its admission and verdict
 */
function contextOf(
  parts: GateParts,
  nowMs: number,
  read: Pick<PaidContext, 'call' | 'state' | 'offer' | 'presented' | 'checked' | 'outcome'>,
  lane: PaidLane | undefined,
): PaidContext {
  const { presented, checked } = read
  const keys = [presented.identity.key]
  if (presented.id) keys.unshift(idempotencyKey(presented.id))
  const presentable = (presented.validUntil + CLOCK_SKEW_SECONDS) * 1000 - nowMs
  return {
    ...read,
    fp: { tool: read.call.tool.id, inputDigest: checked.digest },
    keys,
    retentionMs: Math.max(DUPLICATE_WINDOW_MS, presentable),
    admission: lane?.admission ?? parts.runner.admit(),
    ...(lane?.verdict ? { verdict: lane.verdict } : {}),
  }
}

/** The answer released: the SettleResponse with its signed delivery receipt. */
async function delivered(parts: GateParts, ctx: PaidContext, answer: Answer): Promise<PaidResult> {
  const settlement = await withReceipt(parts.receipts, answer.settlement, {
    tool: ctx.call.tool.id,
    resource: ctx.call.resource.url,
    requirements: ctx.offer.requirements,
    inputDigest: ctx.fp.inputDigest,
    result: answer.result,
    nowSeconds: answer.nowSeconds,
    matched: ctx.presented.matched,
    ...voucherOf(ctx),
  })
  return {
    result: answer.result,
    settlement,
    inputDigest: ctx.fp.inputDigest,
    nowSeconds: answer.nowSeconds,
    ...(answer.replayed ? { replayed: true as const } : {}),
  }
}
