import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import { logger } from '../logger.js'
import {
  FacilitatorUnavailableError,
  GuardUnavailableError,
  InvalidInputError,
  InvalidJsonError,
  PaymentConflictError,
  PaymentIdentifierConflictError,
  PaymentInProgressError,
  PaymentRequiredError,
  SettlementUnknownError,
  ShuttingDownError,
} from '../payment/errors.js'
import { currentRequestId } from '../request-context.js'
import { CheckTimeoutError, OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import { TelemetryUnavailableError } from '../telemetry/types.js'
import { ToolError } from '../tools/types.js'

export { InvalidJsonError }

/**
 * The failure envelope of SPEC 2.1 and 7: `{ok: false, error, code}`, plus optional details, and
 * the `request_id` of the request it answers (its `X-Request-Id`) when made while one is served.
 */
export interface FailureBody {
  ok: false
  error: string
  code: string
  request_id?: string
  [extra: string]: unknown
}

/** The body is larger than the service accepts. HTTP 413, code `payload_too_large`. */
export class PayloadTooLargeError extends Error {
  override readonly name = 'PayloadTooLargeError'
  readonly code = 'payload_too_large'
  constructor(message = 'The body exceeds 1 MiB') {
    super(message)
  }
}

/** No such path. HTTP 404, code `not_found`. */
export class NotFoundError extends Error {
  override readonly name = 'NotFoundError'
  readonly code = 'not_found'
  constructor(message = 'Not found') {
    super(message)
  }
}

/**
 * Too many unpaid requests from one client. HTTP 429, code `rate_limited`, with `Retry-After` and
 * the IETF `RateLimit-Policy` and `RateLimit` headers the rate limiter computed for this refusal
 * (src/http/rate-limit.ts). Over MCP a refused `tools/call` is an `isError` result with this code.
 */
export class RateLimitedError extends Error {
  override readonly name = 'RateLimitedError'
  readonly code = 'rate_limited'
  /**
   * @param retryAfterSeconds - seconds until the client's window resets
   * @param headers - `RateLimit-Policy`, `RateLimit` and `Cache-Control` (HTTP only)
   */
  constructor(
    message: string,
    readonly retryAfterSeconds: number,
    readonly headers: Record<string, string> = {},
  ) {
    super(message)
  }
}

/** The path exists, but not for this method. HTTP 405 with `Allow`, code `method_not_allowed`. */
export class MethodNotAllowedError extends Error {
  override readonly name = 'MethodNotAllowedError'
  readonly code = 'method_not_allowed'
  /**
   * @param method - the refused method
   * @param path - the request path
   * @param allow - the methods the path answers, for the `Allow` header
   */
  constructor(
    method: string,
    path: string,
    readonly allow: string[],
  ) {
    super(`${method} is not allowed on ${path}; use ${allow.join(', ')}`)
  }
}

/**
 * Every service-level `code` with its HTTP status and meaning. Tool codes (400) are listed in
 * docs/tools.md. This table feeds docs/errors.md, OpenAPI and llms.txt, and gives
 * {@link describeFailure} its statuses.
 */
export const SERVICE_ERROR_CODES = {
  payment_required: {
    status: 402,
    meaning: 'No payment was presented; pay one of the offered rails and retry.',
  },
  invalid_payment: {
    status: 402,
    meaning:
      'The payment could not be decoded, is over 32 KiB or its bounds, is not an x402 v2 PaymentPayload of scheme exact (no member of its own), matches none of the offered rails, or its authorization is of another amount or payee, expired, or valid for longer than maxTimeoutSeconds (the message names the field); refused before the facilitator is asked.',
  },
  payment_verification_failed: {
    status: 402,
    meaning:
      'The facilitator rejected the payment; PaymentRequired.error holds its reason (e.g. insufficient_funds).',
  },
  duplicate_settlement: {
    status: 402,
    meaning:
      'The same payment (or your own payment-identifier id) was already sent to settlement for a different call (tool or input), its settlement failed, or its replays are used up (REPLAY_LIMIT, 3 by default, in all); sign a new payment. A payment stays on record for at least 120 s and for as long as it could be presented (Solana: 300 s). The same call is otherwise replayed (200, original PAYMENT-RESPONSE).',
  },
  payment_in_progress: {
    status: 409,
    meaning:
      'The same payment (or payment-identifier id) is held by a call still in progress; nothing was charged by this request. Retry after Retry-After (1 s) to get its result.',
  },
  payment_conflict: {
    status: 409,
    meaning:
      'The same authorization (EIP-3009 payer and nonce, or Solana transaction message) was already presented with another signature; nothing was verified or charged. Sign a new payment.',
  },
  payment_identifier_conflict: {
    status: 409,
    meaning:
      'The payment-identifier id is held by another payment whose payer is not yours (or your payment does not verify); the same answer whatever the tool and input, and nothing was charged. Use a new, random id.',
  },
  settlement_failed: {
    status: 402,
    meaning:
      'Settlement failed; the result is withheld and PAYMENT-RESPONSE holds the facilitator response.',
  },
  invalid_request: {
    status: 400,
    meaning: 'The body does not match the tool input schema; `issues` lists JSON Pointers.',
  },
  invalid_json: { status: 400, meaning: 'The body is not valid JSON.' },
  input_check_timeout: {
    status: 400,
    meaning:
      'Checking the input (parse, schema, limits) did not finish within its time budget (TOOL_TIMEOUT_MS); the payment was not verified and nothing was charged. Send a smaller or simpler input.',
  },
  tool_timeout: {
    status: 400,
    meaning:
      'The tool did not finish within its time budget (TOOL_TIMEOUT_MS, 2 s by default) and was stopped; nothing was charged.',
  },
  payload_too_large: { status: 413, meaning: 'The body exceeds 1 MiB.' },
  not_found: { status: 404, meaning: 'No such path.' },
  method_not_allowed: {
    status: 405,
    meaning: 'The path exists but not for this method; see the Allow header.',
  },
  rate_limited: {
    status: 429,
    meaning:
      'Too many requests without money from this client (RATE_LIMIT_POINTS per RATE_LIMIT_DURATION_S, 120 per 60 s by default): every request costs a point per started 64 KiB of body before any work, a paid one too; a settled payment gives its points back and two more, so a client paying for what it calls is never limited. Retry after Retry-After seconds; RateLimit-Policy and RateLimit state the quota.',
  },
  facilitator_unavailable: {
    status: 503,
    meaning:
      'No facilitator is configured or it is unreachable; fail-closed, nothing was charged (the same payment may be sent again).',
  },
  settlement_unknown: {
    status: 503,
    meaning:
      'The tool ran and its settlement was sent, but the facilitator did not say how it ended: the payment may have moved. The result is withheld and the payment held; retry the same payment for the same input within 120 s to settle it and get the result (see "Settlement in doubt").',
  },
  overloaded: {
    status: 503,
    meaning:
      'Every tool worker is busy and the queue is full (refused before verify), or a verified call waited past its queue deadline (not run, not settled); nothing was charged. Retry after Retry-After seconds.',
  },
  guard_unavailable: {
    status: 503,
    meaning:
      'The shared duplicate-settlement guard (Redis) is unreachable or slower than REDIS_TIMEOUT_MS; fail-closed before verify, nothing ran or was charged. Retry after Retry-After.',
  },
  shutting_down: {
    status: 503,
    meaning:
      'The instance is shutting down (answered with Connection: close); nothing was run or charged. Retry.',
  },
  telemetry_unavailable: {
    status: 503,
    meaning: 'Telemetry storage is temporarily unavailable (GET /stats only).',
  },
  internal_error: { status: 500, meaning: 'An unexpected server error; nothing was charged.' },
} as const satisfies Record<string, { status: number; meaning: string }>

/** A service-level failure code. */
export type ServiceErrorCode = keyof typeof SERVICE_ERROR_CODES

/** An HTTP status a failure can come with. */
export type FailureStatus = (typeof SERVICE_ERROR_CODES)[ServiceErrorCode]['status']

/**
 * A failure, whatever the transport: the status (HTTP's; MCP carries the same `code` in an
 * `isError` result), the envelope, and what a transport may add beside the envelope.
 */
export interface Failure {
  status: FailureStatus
  body: FailureBody
  /** The x402 v2 PaymentRequired of a 402 (HTTP: `PAYMENT-REQUIRED`; MCP: `structuredContent`). */
  paymentRequired?: PaymentRequired
  /** The facilitator's SettleResponse after a failed settlement (HTTP: `PAYMENT-RESPONSE`). */
  settlement?: SettleResponse
  /** Seconds to wait before retrying (HTTP: `Retry-After`). */
  retryAfterSeconds?: number
  /** The methods the path answers (HTTP: `Allow`). */
  allow?: string[]
  /** More HTTP headers of this failure (the rate limit's `RateLimit-Policy` and `RateLimit`). */
  headers?: Record<string, string>
}

/** Seconds a client should wait after a 503 of the facilitator or of telemetry. */
const RETRY_AFTER_SECONDS = 5

function fail(
  code: ServiceErrorCode,
  message: string,
  extra: Record<string, unknown> = {},
  beside: Omit<Failure, 'status' | 'body'> = {},
): Failure {
  return {
    status: SERVICE_ERROR_CODES[code].status,
    body: { ok: false, error: message, code, ...extra },
    ...beside,
  }
}

/**
 * Maps any error to its failure: status, envelope and what goes beside it. This is the only place
 * where failure kinds become codes and statuses; the HTTP adapter turns the result into a
 * Response, the MCP adapter into an `isError` tool result, so the codes, messages and extras
 * (`issues`, `details`, `input_check`, `request_id`) of the two transports cannot drift apart.
 *
 * @example
 * describeFailure(new InvalidJsonError('Unexpected token'))
 * // { status: 400, body: { ok: false, error: 'Unexpected token', code: 'invalid_json' } }
 * describeFailure(new FacilitatorUnavailableError('down'))
 * // { status: 503, body: { ok: false, error: 'down', code: 'facilitator_unavailable' },
 * //   retryAfterSeconds: 5 }
 */
export function describeFailure(error: unknown): Failure {
  const failure = describe(error)
  // Inside a request (src/http/request-id.ts), so that a customer's complaint quoting the envelope
  // finds the request's log lines; the rate limiter, which builds its envelope once, adds it itself.
  const requestId = currentRequestId()
  if (requestId !== undefined) failure.body.request_id = requestId
  return failure
}

function describe(error: unknown): Failure {
  if (error instanceof PaymentRequiredError) {
    const extra = error.extras.inputCheck ? { input_check: error.extras.inputCheck } : {}
    return fail(error.code, error.message, extra, {
      paymentRequired: error.paymentRequired,
      ...(error.extras.settlement ? { settlement: error.extras.settlement } : {}),
    })
  }
  if (error instanceof InvalidInputError) {
    return fail(error.code, error.message, { issues: error.issues })
  }
  if (error instanceof ToolError) {
    // Every tool code is a 400 (src/tools/errors.ts).
    return {
      status: 400,
      body: {
        ok: false,
        error: error.message,
        code: error.code,
        ...(error.details ? { details: error.details } : {}),
      },
    }
  }
  if (error instanceof InvalidJsonError) return fail(error.code, error.message)
  if (error instanceof PayloadTooLargeError) return fail(error.code, error.message)
  if (error instanceof NotFoundError) return fail(error.code, error.message)
  if (error instanceof RateLimitedError) {
    return fail(
      error.code,
      error.message,
      {},
      { retryAfterSeconds: error.retryAfterSeconds, headers: error.headers },
    )
  }
  if (error instanceof MethodNotAllowedError) {
    return fail(error.code, error.message, {}, { allow: error.allow })
  }
  if (error instanceof ToolTimeoutError || error instanceof CheckTimeoutError) {
    return fail(error.code, error.message)
  }
  if (error instanceof PaymentInProgressError || error instanceof SettlementUnknownError) {
    return fail(error.code, error.message, {}, { retryAfterSeconds: error.retryAfterSeconds })
  }
  if (error instanceof PaymentIdentifierConflictError || error instanceof PaymentConflictError) {
    return fail(error.code, error.message)
  }
  if (
    error instanceof FacilitatorUnavailableError ||
    error instanceof GuardUnavailableError ||
    error instanceof TelemetryUnavailableError
  ) {
    return fail(error.code, error.message, {}, { retryAfterSeconds: RETRY_AFTER_SECONDS })
  }
  if (error instanceof OverloadedError) {
    return fail(error.code, error.message, {}, { retryAfterSeconds: error.retryAfterSeconds })
  }
  if (error instanceof ShuttingDownError) {
    return fail(error.code, error.message, {}, { retryAfterSeconds: 1 })
  }
  // Name and frames, not the message: a message may quote the request (JSON.parse does).
  logger.error(
    error instanceof Error
      ? { err: error.name, stack: error.stack?.split('\n').slice(1).join('\n') }
      : { err: typeof error },
    'unhandled error',
  )
  return fail('internal_error', 'Internal error; nothing was charged')
}
