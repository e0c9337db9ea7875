import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { VerifyError } from '@x402/core/types'
import { logSafe, marksDown } from '../facilitators/failures.js'
import type { FacilitatorLink, LiveState } from '../facilitators/link.js'
import { logger } from '../logger.js'
import type { GateParts, PaidContext } from './call.js'
import { FacilitatorUnavailableError, PaymentRequiredError } from './errors.js'
import type { Offer } from './offer.js'
import { releaseChannelOnFailure } from './voucher.js'
import { CHANNEL_STATE_UNAVAILABLE } from './voucher-shape.js'

/** The facilitator's verdict on a payment. */
export type Verdict =
  | { valid: true; payer: string | undefined }
  | { valid: false; reason: string; payer: string | undefined }

/** A verdict that the payment is valid, with the payer the facilitator named. */
export type ValidVerdict = Extract<Verdict, { valid: true }>

/**
 * Asks the facilitator to verify a payment (bounded by FACILITATOR_TIMEOUT_MS). A facilitator 4xx
 * carrying a VerifyResponse is a verdict on the payment, not an outage.
 *
 * @example const verdict = await verifyPayment(link, state, payment, matched, extensions)
 * @throws {FacilitatorUnavailableError} when the facilitator cannot be reached or fails (5xx,
 *   timeout): nothing was verified. Only a failure that says the facilitator is down (`marksDown`)
 *   makes the link report it unavailable.
 */
export async function verifyPayment(
  link: FacilitatorLink,
  state: LiveState,
  payment: PaymentPayload,
  requirements: PaymentRequirements,
  extensions: Record<string, unknown>,
): Promise<Verdict> {
  try {
    const response = await state.server.verifyPayment(payment, requirements, extensions)
    link.observe()
    return response.isValid
      ? { valid: true, payer: response.payer }
      : {
          valid: false,
          reason: response.invalidReason ?? 'invalid_payment',
          payer: response.payer,
        }
  } catch (error) {
    if (error instanceof VerifyError && error.statusCode < 500) {
      link.observe()
      return { valid: false, reason: error.invalidReason ?? 'invalid_payment', payer: error.payer }
    }
    if (marksDown(error)) link.observe(error)
    logger.warn(logSafe(error), 'facilitator verify failed')
    throw new FacilitatorUnavailableError(
      'Payment facilitator is unavailable; nothing was run or charged',
    )
  }
}

/**
 * The facilitator's verdict on a call's payment: the one it gave when the payment earned the paid
 * lane (`ctx.verdict`), else asked now, so that a call is verified once.
 *
 * @throws {FacilitatorUnavailableError} the facilitator cannot be reached or failed
 * @example const verdict = await verdictOf(parts, ctx)
 */
export function verdictOf(parts: GateParts, ctx: PaidContext): Promise<Verdict> {
  if (ctx.verdict) return Promise.resolve(ctx.verdict)
  const { presented, offer } = ctx
  return verifyPayment(
    parts.link,
    ctx.state,
    presented.payment,
    presented.matched,
    offer.extensions,
  )
}

/**
 * The refusal of a payment that was rejected: 402 `payment_verification_failed`, with its reason
 * (for a channel payment, its corrective state: the SDK enriches the PaymentRequired with it); a
 * channel store that could not be read is a fault of ours, 503.
 *
 * @example throw await verificationFailed(offer, 'insufficient_funds')
 */
export async function verificationFailed(
  offer: Offer,
  reason: string,
  payment?: PaymentPayload,
): Promise<PaymentRequiredError | FacilitatorUnavailableError> {
  if (reason === CHANNEL_STATE_UNAVAILABLE) {
    return new FacilitatorUnavailableError(
      "The channel's state cannot be read right now; nothing was run or charged: retry the same payment",
    )
  }
  const channel = payment !== undefined && payment.accepted.scheme !== 'exact'
  return new PaymentRequiredError(
    'payment_verification_failed',
    channel
      ? `The channel payment was rejected: ${reason}`
      : `The facilitator rejected the payment: ${reason}`,
    await offer.refusal(reason, payment),
  )
}

/**
 * The verify step of a fresh paid call: its verdict ({@link verdictOf}), and tells the call's
 * outcome who the payer is (the `verified` event).
 *
 * @returns the payer's keyed hash (for the guard records), if the facilitator named the payer
 * @throws {PaymentRequiredError} `payment_verification_failed`, with the facilitator's reason
 * @throws {FacilitatorUnavailableError} the facilitator cannot be reached or failed
 * @example const payer = await verifyCall(parts, ctx)
 */
export async function verifyCall(parts: GateParts, ctx: PaidContext): Promise<string | undefined> {
  const { presented, offer } = ctx
  const verdict = await verdictOf(parts, ctx)
  if (!verdict.valid) throw await verificationFailed(offer, verdict.reason, presented.payment)
  releaseChannelOnFailure(ctx)
  parts.outcomes.verified(ctx.outcome, verdict.payer)
  return verdict.payer ? parts.payerHash(verdict.payer) : undefined
}
