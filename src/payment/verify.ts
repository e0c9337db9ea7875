import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { VerifyError } from '@x402/core/types'
import { logSafe, marksDown } from '../facilitators/failures.js'
import type { FacilitatorLink, LiveState } from '../facilitators/link.js'
import { logger } from '../logger.js'
import type { GateParts, PaidContext } from './call.js'
import { FacilitatorUnavailableError, PaymentRequiredError } from './errors.js'
import { releaseChannelOnFailure } from './voucher.js'
import { CHANNEL_STATE_UNAVAILABLE } from './voucher-shape.js'

/** The facilitator's verdict on a payment. */
export type Verdict =
  | { valid: true; payer: string | undefined }
  | { valid: false; reason: string; payer: string | undefined }

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
 * The verify step of a fresh paid call: asks the facilitator, and tells the call's outcome who
 * the payer is.
 *
 * @returns the payer's keyed hash (for the guard records), if the facilitator named the payer
 * @throws {PaymentRequiredError} `payment_verification_failed`, with the facilitator's reason
 * @throws {FacilitatorUnavailableError} the facilitator cannot be reached or failed
 * @example const payer = await verifyCall(parts, ctx)
 */
export async function verifyCall(parts: GateParts, ctx: PaidContext): Promise<string | undefined> {
  const { presented, offer } = ctx
  const verdict = await verifyPayment(
    parts.link,
    ctx.state,
    presented.payment,
    presented.matched,
    offer.extensions,
  )
  if (!verdict.valid) {
    if (verdict.reason === CHANNEL_STATE_UNAVAILABLE) {
      throw new FacilitatorUnavailableError(
        "The channel's state cannot be read right now; nothing was run or charged: retry the same payment",
      )
    }
    throw new PaymentRequiredError(
      'payment_verification_failed',
      presented.payment.accepted.scheme === 'exact'
        ? `The facilitator rejected the payment: ${verdict.reason}`
        : `The channel payment was rejected: ${verdict.reason}`,
      await offer.refusal(verdict.reason, presented.payment),
    )
  }
  releaseChannelOnFailure(ctx)
  parts.outcomes.verified(ctx.outcome, verdict.payer)
  return verdict.payer ? parts.payerHash(verdict.payer) : undefined
}
