import type { LiveState } from '../facilitators/link.js'
import type { Admission } from '../runner/runner.js'
import type { GateParts } from './call.js'
import type { Offer } from './offer.js'
import type { CallOutcome } from './outcome.js'
import type { PresentedPayment } from './presented.js'
import { type ValidVerdict, verificationFailed, verifyPayment } from './verify.js'
import { releaseChannelOnFailure } from './voucher.js'

/** What a call's payment earned it: the paid lane, for the input check the free lane could not make. */
export interface PaidLane {
  /** Its place in the tool runner, taken before anything was verified. */
  admission: Admission
  /**
   * The facilitator's verdict, when a verify earned it (the verify step asks nothing more);
   * absent when the guard holds this very payment.
   */
  verdict?: ValidVerdict
}

/**
 * Earns a call the paid lane, when the free lane could not check its input (full, or out of
 * time): a payment earns paid capacity only once it verifies, so that a payment nobody funded puts
 * no work on the paid lane. In order:
 * - room in the tool runner (a full pool refuses the call before anything is verified);
 * - its very payment (same authorization and signature) already held by the guard, pending,
 *   settled or in doubt: a retry or a replay of a payment sent before, which verify could not
 *   judge again (its nonce may be used), and which the claim step answers without verify;
 * - else verify, with the facilitator: the verdict goes on to the verify step, so a call is
 *   verified once.
 *
 * @throws {OverloadedError} the tool runner is full
 * @throws {GuardUnavailableError} the shared guard is unreachable
 * @throws {PaymentRequiredError} `payment_verification_failed`, with the facilitator's reason
 * @throws {FacilitatorUnavailableError} the facilitator cannot be reached or failed
 * @example const lane = await earnPaidLane(parts, { state, offer, presented })
 */
export async function earnPaidLane(
  parts: GateParts,
  read: { state: LiveState; offer: Offer; presented: PresentedPayment; outcome: CallOutcome },
): Promise<PaidLane> {
  const { state, offer, presented } = read
  const admission = parts.runner.admit()
  const { identity } = presented
  const held = await parts.guard.peek(identity.key)
  if (held && held.state !== 'spent' && held.proof === identity.proof) return { admission }
  const verdict = await verifyPayment(
    parts.link,
    state,
    presented.payment,
    presented.matched,
    offer.extensions,
  )
  if (!verdict.valid) throw await verificationFailed(offer, verdict.reason, presented.payment)
  // A channel payment is reserved from its verify on: given back if the call then fails.
  releaseChannelOnFailure(read)
  return { admission, verdict }
}
