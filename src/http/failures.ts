import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { describeFailure, type FailureBody } from '../failures/describe.js'
import { NotFoundError, PayloadTooLargeError } from '../failures/errors.js'
import { paymentRequiredHeader, settlementHeader } from './headers.js'

/** A failure as an HTTP response: status, envelope and headers. */
export interface HttpFailure {
  status: ContentfulStatusCode
  body: FailureBody
  headers: Record<string, string>
}

/** hono's own exceptions (body limit, not found) as our failure kinds. */
function fromHono(error: unknown): unknown {
  if (error instanceof HTTPException) {
    if (error.status === 413) return new PayloadTooLargeError()
    if (error.status === 404) return new NotFoundError()
  }
  return error
}

/**
 * Maps any error to its HTTP response: the status and envelope of {@link describeFailure} (the one
 * place failure kinds become codes and statuses) plus the headers that carry the rest: the x402
 * `PAYMENT-REQUIRED` and `PAYMENT-RESPONSE`, `Retry-After`, `Allow`, the rate limit's headers.
 *
 * @example
 * const { status, body, headers } = toHttpFailure(new InvalidJsonError('Unexpected token'))
 * // status 400, body { ok: false, error: 'Unexpected token', code: 'invalid_json' }, headers {}
 */
export function toHttpFailure(error: unknown): HttpFailure {
  const failure = describeFailure(fromHono(error))
  const headers: Record<string, string> = {}
  if (failure.paymentRequired) {
    headers['PAYMENT-REQUIRED'] = paymentRequiredHeader(failure.paymentRequired)
    headers['Cache-Control'] = 'no-store'
  }
  if (failure.settlement) headers['PAYMENT-RESPONSE'] = settlementHeader(failure.settlement)
  if (failure.retryAfterSeconds !== undefined) {
    headers['Retry-After'] = String(failure.retryAfterSeconds)
  }
  if (failure.allow) headers.Allow = failure.allow.join(', ')
  if (failure.headers) Object.assign(headers, failure.headers)
  return { status: failure.status, body: failure.body, headers }
}
