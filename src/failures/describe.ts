import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import {
  type FailureStatus,
  SERVICE_ERROR_CODES,
  type ServiceErrorCode,
} from '../descriptions/error-codes.js'
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
import {
  MethodNotAllowedError,
  NotFoundError,
  PayloadTooLargeError,
  RateLimitedError,
} from './errors.js'

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

/** Appended to a tool's refusal: a call whose tool refused it is never settled. */
export const NOTHING_CHARGED = '; nothing was charged'

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
    // Every tool code is a 400 (src/tools/errors.ts). A tool that refused its input is never
    // settled: the payer reads that here, not only in the docs.
    return {
      status: 400,
      body: {
        ok: false,
        error: error.message.endsWith(NOTHING_CHARGED)
          ? error.message
          : `${error.message}${NOTHING_CHARGED}`,
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
