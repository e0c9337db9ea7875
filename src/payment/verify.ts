import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { VerifyError } from '@x402/core/types'
import { logSafe, marksDown } from '../facilitators/failures.js'
import type { FacilitatorLink, LiveState } from '../facilitators/link.js'
import { logger } from '../logger.js'
import type { GateParts, PaidContext } from './call.js'
import { FacilitatorUnavailableError, PaymentRequiredError } from './errors.js'
import type { Offer } from './offer.js'

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
 * The refusal of a payment the facilitator rejected: 402 `payment_verification_failed`, with its
 * reason.
 *
 * @example throw await verificationFailed(offer, 'insufficient_funds')
 */
export async function verificationFailed(
  offer: Offer,
  reason: string,
): Promise<PaymentRequiredError> {
  return new PaymentRequiredError(
    'payment_verification_failed',
    `The facilitator rejected the payment: ${reason}`,
    await offer.refusal(reason),
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
  const verdict = await verdictOf(parts, ctx)
  if (!verdict.valid) throw await verificationFailed(ctx.offer, verdict.reason)
  parts.outcomes.verified(ctx.outcome, verdict.payer)
  return verdict.payer ? parts.payerHash(verdict.payer) : undefined
}
