import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import type { InputIssue } from '../tools/input-issues.js'

export type { InputIssue }

/** The free pre-payment check added to a 402 when the unpaid request carried a body. */
export interface InputCheck {
  /** Whether a paid call with this body would pass its input check; null: it was not checked. */
  valid: boolean | null
  errors: InputIssue[]
  /** Why the body was not checked (the free check was busy or ran out of time). */
  reason?: string
}

/**
 * The request body (or MCP arguments) does not match the tool's input schema. HTTP 400, code
 * `invalid_request`. Raised before any facilitator call.
 */
export class InvalidInputError extends Error {
  override readonly name = 'InvalidInputError'
  readonly code = 'invalid_request'
  constructor(readonly issues: InputIssue[]) {
    super(
      `Invalid request: ${issues
        .slice(0, 5)
        .map((i) => `${i.path || '/'} ${i.message}`)
        .join('; ')}`,
    )
  }
}

/**
 * The request body is not JSON, or a paid HTTP call came without one. HTTP 400, code
 * `invalid_json`. Raised before any facilitator call.
 */
export class InvalidJsonError extends Error {
  override readonly name = 'InvalidJsonError'
  readonly code = 'invalid_json'
}

/**
 * An error that is an answer, not a fault: thrown for every unpaid request, and never logged with
 * a stack. It captures none: V8's stack capture was the largest single cost of the unpaid 402.
 */
class AnswerError extends Error {
  constructor(message: string) {
    const limit = Error.stackTraceLimit
    Error.stackTraceLimit = 0
    try {
      super(message)
    } finally {
      Error.stackTraceLimit = limit
    }
  }
}

/** Machine-readable codes of {@link PaymentRequiredError}. */
export type PaymentRequiredCode =
  | 'payment_required'
  | 'invalid_payment'
  | 'payment_verification_failed'
  | 'duplicate_settlement'
  | 'settlement_failed'

/**
 * The call was not (or not validly) paid: HTTP 402 with the x402 v2 PaymentRequired in the
 * `PAYMENT-REQUIRED` header, or an MCP `isError` result carrying it. The tool result, if any was
 * computed, is withheld.
 *
 * Codes:
 * - `payment_required`: no payment was presented;
 * - `invalid_payment`: the payment could not be decoded, is over 32 KiB, or matches none of the
 *   offered rails (wrong scheme, network, amount, asset or payTo);
 * - `payment_verification_failed`: the facilitator rejected it (its reason, e.g.
 *   `insufficient_funds`, is passed unchanged in PaymentRequired.error);
 * - `duplicate_settlement`: the same payment (or the payer's own `payment-identifier` id) was
 *   sent to settlement in the last 120 s for another call, its settlement failed, or its replays
 *   are used up (`REPLAY_LIMIT`);
 * - `settlement_failed`: the facilitator could not settle it (`settlement` holds its response).
 */
export class PaymentRequiredError extends AnswerError {
  override readonly name = 'PaymentRequiredError'
  constructor(
    readonly code: PaymentRequiredCode,
    message: string,
    readonly paymentRequired: PaymentRequired,
    readonly extras: { settlement?: SettleResponse; inputCheck?: InputCheck } = {},
  ) {
    super(message)
  }
}

export { FacilitatorUnavailableError } from '../facilitators/errors.js'

/**
 * The service is shutting down (SIGTERM): a request that arrives while in-flight calls finish,
 * or a call that could no longer settle before the shutdown deadline. HTTP 503 with
 * `Connection: close`, code `shutting_down`; nothing was charged. Retry (on another instance).
 */
export class ShuttingDownError extends Error {
  override readonly name = 'ShuttingDownError'
  readonly code = 'shutting_down'
  constructor(message = 'The service is shutting down; nothing was run or charged. Retry') {
    super(message)
  }
}

/**
 * The same payment (or `payment-identifier` id) is held by a call still in progress, for the same
 * tool and input. HTTP 409 with `Retry-After: 1`, code `payment_in_progress`; nothing was charged
 * by this request. The retry gets the settled call's replay (or, if the first call failed, runs).
 */
export class PaymentInProgressError extends Error {
  override readonly name = 'PaymentInProgressError'
  readonly code = 'payment_in_progress'
  readonly retryAfterSeconds = 1
}

/**
 * The shared state is unreachable or too slow (Redis down, or slower than REDIS_TIMEOUT_MS):
 * paid calls fail closed before verify. HTTP 503, code `guard_unavailable`; nothing was run or
 * charged.
 */
export class GuardUnavailableError extends Error {
  override readonly name = 'GuardUnavailableError'
  readonly code = 'guard_unavailable'
  constructor(
    message = 'The duplicate-settlement guard is unavailable; nothing was verified, run or charged. Retry',
  ) {
    super(message)
  }
}

/**
 * A `payment-identifier` id held by another payment whose payer is not this request's (or whose
 * payment does not verify). HTTP 409, code `payment_identifier_conflict`: the same answer whatever
 * the tool and input, so that nothing is learnt about the call that holds the id; nothing is
 * settled for this payment. Choose another id (a random one: `generatePaymentId`).
 */
export class PaymentIdentifierConflictError extends Error {
  override readonly name = 'PaymentIdentifierConflictError'
  readonly code = 'payment_identifier_conflict'
  constructor(
    message = 'This payment-identifier id is held by another payment; nothing was charged. Use a new, random id',
  ) {
    super(message)
  }
}

/**
 * The payment's own authorization (EIP-3009: its payer and nonce; Solana: its transaction message)
 * is held by a payment with another signature: a re-signed or altered copy of a payment already
 * presented. HTTP 409, code `payment_conflict`; nothing is verified or settled for it. Sign a new
 * payment (a new nonce).
 */
export class PaymentConflictError extends Error {
  override readonly name = 'PaymentConflictError'
  readonly code = 'payment_conflict'
  constructor(
    message = 'This authorization was already presented with another signature; nothing was charged. Sign a new payment',
  ) {
    super(message)
  }
}

/** The `Retry-After` of a settlement that became in doubt, in seconds. */
export const SETTLEMENT_RETRY_AFTER_SECONDS = 5

/**
 * The tool ran and its settlement was sent, but its outcome is unknown (the facilitator timed out,
 * failed after receiving it, still reported `settlement_pending` after its one retry, or refused a
 * retry while the chain may still decide it): the payment may have moved. HTTP 503 with
 * `Retry-After`, code `settlement_unknown`; the result is withheld and the payment stays held: a
 * retry of the same payment (or id), for the same tool and input, after Retry-After, is judged on
 * chain or settled again and gets the result once it lands (docs/errors.md says what each answer
 * promises). A retry before Retry-After is answered from the record with the time that remains.
 */
export class SettlementUnknownError extends Error {
  override readonly name = 'SettlementUnknownError'
  readonly code = 'settlement_unknown'
  /**
   * @param retryAfterSeconds - when a retry may be answered otherwise, in seconds (at least 1)
   */
  constructor(
    message = 'The tool ran, but the settlement outcome is unknown: the payment may have moved. Retry the same payment for the same input within 120 s to get the result once it settles',
    readonly retryAfterSeconds: number = SETTLEMENT_RETRY_AFTER_SECONDS,
  ) {
    super(message)
  }
}
