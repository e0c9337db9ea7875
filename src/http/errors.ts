import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { logger } from '../logger.js'
import {
  FacilitatorUnavailableError,
  InvalidInputError,
  PaymentRequiredError,
} from '../payment/errors.js'
import { TelemetryUnavailableError } from '../telemetry/index.js'
import { ToolError } from '../tools/types.js'
import { paymentRequiredHeader, settlementHeader } from './headers.js'

/**
 * The failure envelope of SPEC 2.1 and 7: `{ok: false, error, code}`, plus optional details.
 */
export interface FailureBody {
  ok: false
  error: string
  code: string
  [extra: string]: unknown
}

/** The request body is not JSON. HTTP 400, code `invalid_json`. */
export class InvalidJsonError extends Error {
  override readonly name = 'InvalidJsonError'
  readonly code = 'invalid_json'
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
 * docs/tools.md. This table feeds docs/errors.md, OpenAPI and llms.txt.
 */
export const SERVICE_ERROR_CODES = {
  payment_required: {
    status: 402,
    meaning: 'No payment was presented; pay one of the offered rails and retry.',
  },
  invalid_payment: {
    status: 402,
    meaning:
      'The payment could not be decoded, is over 32 KiB, or matches none of the offered rails (the message names the field).',
  },
  payment_verification_failed: {
    status: 402,
    meaning:
      'The facilitator rejected the payment; PaymentRequired.error holds its reason (e.g. insufficient_funds).',
  },
  duplicate_settlement: {
    status: 402,
    meaning: 'The same payment is being settled or was settled in the last 120 seconds.',
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
  payload_too_large: { status: 413, meaning: 'The body exceeds 1 MiB.' },
  not_found: { status: 404, meaning: 'No such path.' },
  method_not_allowed: {
    status: 405,
    meaning: 'The path exists but not for this method; see the Allow header.',
  },
  facilitator_unavailable: {
    status: 503,
    meaning:
      'No facilitator is configured or it is unreachable; fail-closed, nothing ran or was charged.',
  },
  telemetry_unavailable: {
    status: 503,
    meaning: 'Telemetry storage is temporarily unavailable (GET /stats only).',
  },
  internal_error: { status: 500, meaning: 'An unexpected server error; nothing was charged.' },
} as const satisfies Record<string, { status: number; meaning: string }>

/** A mapped error: status, envelope and headers. */
export interface HttpFailure {
  status: ContentfulStatusCode
  body: FailureBody
  headers: Record<string, string>
}

const fail = (
  status: ContentfulStatusCode,
  code: string,
  error: string,
  extra: Record<string, unknown> = {},
  headers: Record<string, string> = {},
): HttpFailure => ({ status, body: { ok: false, error, code, ...extra }, headers })

/**
 * The failure envelope of any error, without status or headers: what the MCP adapter puts in an
 * `isError` tool result. Derived from {@link toHttpFailure}, so the codes, messages and extras
 * (`issues`, `details`, `input_check`) of the two transports cannot drift apart.
 *
 * @example
 * toFailureEnvelope(new FacilitatorUnavailableError('down'))
 * // { ok: false, error: 'down', code: 'facilitator_unavailable' }
 */
export function toFailureEnvelope(error: unknown): FailureBody {
  return toHttpFailure(error).body
}

/**
 * Maps any error to its HTTP response. This is the only place where failure kinds become statuses.
 *
 * @example
 * const { status, body, headers } = toHttpFailure(new InvalidJsonError('Unexpected token'))
 * // status 400, body { ok: false, error: 'Unexpected token', code: 'invalid_json' }
 */
export function toHttpFailure(error: unknown): HttpFailure {
  if (error instanceof PaymentRequiredError) {
    const headers: Record<string, string> = {
      'PAYMENT-REQUIRED': paymentRequiredHeader(error.paymentRequired),
      'Cache-Control': 'no-store',
    }
    if (error.extras.settlement) {
      headers['PAYMENT-RESPONSE'] = settlementHeader(error.extras.settlement)
    }
    const extra = error.extras.inputCheck ? { input_check: error.extras.inputCheck } : {}
    return fail(402, error.code, error.message, extra, headers)
  }
  if (error instanceof InvalidInputError) {
    return fail(400, error.code, error.message, { issues: error.issues })
  }
  if (error instanceof ToolError) {
    return fail(400, error.code, error.message, error.details ? { details: error.details } : {})
  }
  if (error instanceof InvalidJsonError) return fail(400, error.code, error.message)
  if (error instanceof MethodNotAllowedError) {
    return fail(405, error.code, error.message, {}, { Allow: error.allow.join(', ') })
  }
  if (error instanceof FacilitatorUnavailableError || error instanceof TelemetryUnavailableError) {
    return fail(503, error.code, error.message, {}, { 'Retry-After': '5' })
  }
  if (error instanceof HTTPException) {
    if (error.status === 413) return fail(413, 'payload_too_large', 'The body exceeds 1 MiB')
    if (error.status === 404) return fail(404, 'not_found', 'Not found')
  }
  // Name and frames, not the message: a message may quote the request (JSON.parse does).
  logger.error(
    error instanceof Error
      ? { err: error.name, stack: error.stack?.split('\n').slice(1).join('\n') }
      : { err: typeof error },
    'unhandled error',
  )
  return fail(500, 'internal_error', 'Internal error; nothing was charged')
}
