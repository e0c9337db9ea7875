import type { SettleResponse } from '@x402/core/types'
import { SettleError } from '@x402/core/types'
import { describeError, logger } from '../logger.js'
import type { GateParts, PaidContext } from './call.js'
import { PaymentRequiredError, SettlementUnknownError } from './errors.js'
import { settleCall } from './settle.js'
import { BATCH_SETTLEMENT } from './voucher-shape.js'

/**
 * Whether the call pays from a prepaid channel with a voucher (x402 `batch-settlement`, no
 * deposit): charged locally, without the facilitator or the chain. A deposit settles on chain
 * through the facilitator, like an `exact` payment.
 */
export function paysByVoucher(ctx: PaidContext): boolean {
  const { payment } = ctx.presented
  return (
    payment.accepted.scheme === BATCH_SETTLEMENT &&
    (payment.payload as { type?: unknown }).type === 'voucher'
  )
}

/**
 * The settle step of a call: a voucher is charged in the channel store ({@link chargeVoucher}), a
 * channel deposit settles on chain ({@link settleDeposit}), an `exact` payment too (`settleCall`).
 */
export function settleStepOf(ctx: PaidContext): typeof settleCall {
  const { payment } = ctx.presented
  if (payment.accepted.scheme !== BATCH_SETTLEMENT) return settleCall
  return paysByVoucher(ctx) ? chargeVoucher : settleDeposit
}

/**
 * The settle step of a channel deposit: the facilitator moves the deposit into the escrow and the
 * SDK's settle hook credits the channel and charges the price (`settleCall`). A deposit whose
 * outcome is unknown charged nothing (only that hook charges, and it did not run), and settling it
 * again without a verify would credit nothing: its keys are freed, so that the same deposit
 * presented again is verified afresh (its authorization is refused if it landed) and a new one
 * goes through.
 *
 * @throws what `settleCall` throws; {@link SettlementUnknownError} with the deposit's own advice
 * @example const settlement = await settleDeposit(parts, ctx, payer)
 */
export async function settleDeposit(
  parts: GateParts,
  ctx: PaidContext,
  payer: string | undefined,
): Promise<SettleResponse> {
  try {
    return await settleCall(parts, ctx, payer)
  } catch (error) {
    if (!(error instanceof SettlementUnknownError)) throw error
    await ctx.outcome.claim?.release()
    throw new SettlementUnknownError(
      'The deposit was sent, but its outcome is unknown: nothing was charged and the result is withheld. Pay again: a deposit that landed stays in your channel',
    )
  }
}

/**
 * What a delivery receipt binds for a channel payment (voucher or deposit): the channel id and the
 * voucher's cumulative amount; nothing for `exact`.
 *
 * @example voucherOf(ctx) // { voucher: { channel: '0x…', cumulative: '3000' } }
 */
export function voucherOf(ctx: PaidContext): { voucher?: { channel: string; cumulative: string } } {
  const payload = ctx.presented.payment.payload as {
    voucher?: { channelId: string; maxClaimableAmount: string }
  }
  if (ctx.presented.payment.accepted.scheme !== BATCH_SETTLEMENT || !payload.voucher) return {}
  return {
    voucher: { channel: payload.voucher.channelId, cumulative: payload.voucher.maxClaimableAmount },
  }
}

/**
 * Lets the channel go when a verified channel payment (voucher or deposit) is not charged: the
 * SDK reserved the channel for this call at verify (its `pendingRequest`), and without this the
 * payer's next voucher would be refused `channel_busy` until the reservation expires.
 */
export function releaseChannelOnFailure(
  ctx: Pick<PaidContext, 'presented' | 'offer' | 'state' | 'outcome'>,
): void {
  const { presented, offer, state, outcome } = ctx
  if (presented.payment.accepted.scheme !== BATCH_SETTLEMENT) return
  outcome.cancel = async () => {
    try {
      await state.server
        .createPaymentCancellationDispatcher(presented.payment, presented.matched, offer.extensions)
        .cancel({ reason: 'handler_failed' })
    } catch (error) {
      logger.warn({ err: describeError(error) }, 'channel reservation not released')
    }
  }
}

/**
 * The settle step of a voucher call: the channel's charged amount moves forward by the price, in
 * the channel store (the SDK's `batch-settlement` server hook: no facilitator, no chain); the
 * channel manager claims the vouchers later, in batches (src/channels/). Records the call
 * `settled` under its keys for replays; the SettleResponse has no transaction and carries the
 * channel's state in `extra` (`channelState`, `chargedAmount`), which the payer's client reads.
 *
 * @param payer - the payer's keyed hash for the records, if known
 * @returns the SettleResponse (`success: true`, `transaction: ''`)
 * @throws {PaymentRequiredError} `settlement_failed`: the voucher could not be charged (the channel
 *   moved on meanwhile: `channel_busy`, a cap below the charge); nothing was charged, the result
 *   is withheld, and the call's keys are freed
 * @example const settlement = await chargeVoucher(parts, ctx, payer)
 */
export async function chargeVoucher(
  _parts: GateParts,
  ctx: PaidContext,
  payer: string | undefined,
): Promise<SettleResponse> {
  const { presented, offer, outcome } = ctx
  let response: SettleResponse
  try {
    response = await ctx.state.server.settlePayment(
      presented.payment,
      presented.matched,
      offer.extensions,
    )
    if (!response.success) throw new SettleError(400, response)
  } catch (error) {
    const reason = error instanceof SettleError ? error.errorReason : undefined
    if (!reason) logger.error({ err: describeError(error) }, 'voucher charge failed')
    const settlement: SettleResponse = {
      success: false,
      errorReason: reason ?? 'settlement_failed',
      transaction: '',
      network: presented.matched.network,
    }
    outcome.settle = 'failed'
    outcome.settlement = settlement
    await outcome.claim?.release()
    throw new PaymentRequiredError(
      'settlement_failed',
      `The voucher was not charged: ${settlement.errorReason}; nothing was charged and the result is withheld: sign a voucher on the channel's current amount and retry`,
      await offer.refusal(settlement.errorReason as string, presented.payment),
      { settlement },
    )
  }
  outcome.settle = 'settled'
  outcome.settlement = response
  const { payer: _, ...recorded } = response
  await outcome.claim?.put({
    call: ctx.fp,
    payment: presented.identity.key,
    proof: presented.identity.proof,
    ...(payer ? { payer } : {}),
    state: 'settled',
    settlement: recorded,
  })
  return response
}
