import type { SettleResponse } from '@x402/core/types'
import type { FacilitatorLink } from '../facilitators/link.js'
import { describeError, logger } from '../logger.js'
import { PaymentRequiredError, SettlementUnknownError } from './errors.js'
import type { Offer, OfferedCall } from './offer.js'
import { type PaymentSource, readPayment } from './presented.js'
import { settlePayment } from './settle.js'
import { verifyPayment } from './verify.js'

/** A refund asked on a tool's URL with GET (the official `batch-settlement` client's refund). */
export interface RefundCall extends OfferedCall {
  payment: PaymentSource
}

/**
 * The refund of a prepaid channel (x402 `batch-settlement`): the payer asks with GET on a tool's
 * URL, with a refund voucher on the channel's charged amount; nothing runs and nothing is
 * charged. The SDK's server scheme checks it against the channel (its verify hooks; the
 * facilitator verifies the rest), then the facilitator claims what was charged and sends the
 * unclaimed rest back to the payer (`refundWithSignature`, signed with our receiver-authorizer
 * key), and the channel record is closed.
 *
 * @param nowSeconds - the payments' clock, in Unix seconds
 * @returns the refund's SettleResponse (the transaction, the channel state in `extra`)
 * @throws {PaymentRequiredError} `invalid_payment` (not a refund of an offered channel),
 *   `payment_verification_failed` (the channel refuses it, with its corrective state) or
 *   `settlement_failed` (the refund transaction failed)
 * @throws {SettlementUnknownError} the refund was sent and its outcome is unknown: ask again
 * @throws {FacilitatorUnavailableError} no facilitator could be asked; nothing moved
 * @example const settlement = await refundChannel(link, offerOf, call, Date.now() / 1000)
 */
export async function refundChannel(
  link: FacilitatorLink,
  offerOf: (
    state: Awaited<ReturnType<FacilitatorLink['ready']>>,
    call: OfferedCall,
  ) => Promise<Offer>,
  call: RefundCall,
  nowSeconds: number,
): Promise<SettleResponse> {
  const state = await link.ready()
  const offer = await offerOf(state, call)
  const presented = await readPayment(call.payment, state, offer, Math.floor(nowSeconds), {
    refund: true,
  })
  const { payment, matched } = presented
  const verdict = await verifyPayment(link, state, payment, matched, offer.extensions)
  if (!verdict.valid) {
    throw new PaymentRequiredError(
      'payment_verification_failed',
      `The refund was rejected: ${verdict.reason}`,
      await offer.refusal(verdict.reason, payment),
    )
  }
  const settled = await settlePayment(link, state, payment, matched, offer.extensions)
  switch (settled.kind) {
    case 'settled':
      logger.info({ network: matched.network }, 'channel refunded')
      return settled.settlement
    case 'failed': {
      const reason = settled.settlement.errorReason ?? 'settlement_failed'
      throw new PaymentRequiredError(
        'settlement_failed',
        `The refund failed: ${reason}; nothing moved`,
        await offer.refusal(reason, payment),
        { settlement: settled.settlement },
      )
    }
    default:
      await state.server
        .createPaymentCancellationDispatcher(payment, matched, offer.extensions)
        .cancel({ reason: 'handler_failed' })
        .catch((error: unknown) =>
          logger.warn({ err: describeError(error) }, 'refund not released'),
        )
      throw new SettlementUnknownError(
        'The refund was sent, but its outcome is unknown: ask for the refund again in a minute; the channel keeps what was not refunded',
      )
  }
}
