import { FacilitatorTimeoutError, SettleError, VerifyError } from '@x402/core/types'

/**
 * Error codes that mean the request never left this machine or never reached the facilitator's
 * HTTP server: the connection was refused or could not be set up (DNS, routing, connect timeout,
 * TLS certificate checks). Each happens before a byte of the request is written. ECONNRESET,
 * EPIPE and undici's "other side closed" (UND_ERR_SOCKET) are not here: a kept-alive connection
 * can break after the request was sent.
 */
const NEVER_REACHED_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EAI_NONAME',
  'EAI_FAIL',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'ENETDOWN',
  'EADDRNOTAVAIL',
  'UND_ERR_CONNECT_TIMEOUT',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'ERR_TLS_CERT_ALTNAME_INVALID',
])

/** The `code` of an error, of each error in its `cause` chain, and of an AggregateError's parts. */
function codesOf(error: unknown, depth = 0): string[] {
  if (depth > 8 || error === null || typeof error !== 'object') return []
  const own = (error as { code?: unknown }).code
  const codes = typeof own === 'string' ? [own] : []
  const parts = error instanceof AggregateError ? error.errors : []
  return [
    ...codes,
    ...parts.flatMap((part) => codesOf(part, depth + 1)),
    ...codesOf((error as { cause?: unknown }).cause, depth + 1),
  ]
}

/**
 * Whether a failed facilitator request certainly never reached the facilitator, so that sending
 * it elsewhere cannot do anything twice: the only case in which a settle may be re-sent to the
 * next facilitator.
 *
 * True for `fetch`'s `TypeError: fetch failed` whose cause (or every part of an AggregateError
 * cause, as undici reports a host with several addresses) has a connection-setup code:
 * `ECONNREFUSED`, DNS failures (`ENOTFOUND`, `EAI_AGAIN`…), unreachable hosts or networks,
 * undici's connect timeout, or a TLS certificate refused during the handshake. False for
 * everything that may have been received: `FacilitatorTimeoutError` (the request may be in
 * flight or done), an HTTP status of any kind (`Facilitator settle failed (503)`, `SettleError`,
 * `VerifyError`), a reset connection, malformed answers, and anything unknown.
 *
 * @example
 * neverReached(new TypeError('fetch failed', { cause: Object.assign(new Error(), { code: 'ECONNREFUSED' }) })) // true
 * neverReached(new FacilitatorTimeoutError('settle', 10_000)) // false
 */
export function neverReached(error: unknown): boolean {
  if (!(error instanceof Error) || error instanceof FacilitatorTimeoutError) return false
  if (error instanceof VerifyError || error instanceof SettleError) return false
  if (httpStatusOf(error) !== undefined) return false
  const codes = codesOf(error.cause)
  if (codes.length === 0) return false
  // An AggregateError is "never reached" only if every attempt was (its own code is the first).
  const leaves =
    error.cause instanceof AggregateError && error.cause.errors.length > 0
      ? error.cause.errors.flatMap((part) => codesOf(part).slice(0, 1))
      : codes.slice(0, 1)
  return leaves.length > 0 && leaves.every((code) => NEVER_REACHED_CODES.has(code))
}

/**
 * The HTTP status a facilitator answered with, if the error carries one: `VerifyError` and
 * `SettleError` hold it; the SDK's plain errors say it in their message
 * (`Facilitator verify failed (503): …`, `Facilitator getSupported failed (401): …`).
 */
export function httpStatusOf(error: unknown): number | undefined {
  if (error instanceof VerifyError || error instanceof SettleError) return error.statusCode
  if (!(error instanceof Error)) return undefined
  const match = /^Facilitator \w+ failed \((\d{3})\)/.exec(error.message)
  return match ? Number(match[1]) : undefined
}

/** What a facilitator call's failure was, for routing and for `/health`. */
export type FailureKind =
  /** A 4xx VerifyError or SettleError: the facilitator's answer on the payment, not an outage. */
  | 'verdict'
  /** It answered 401 or 403: our credentials are missing, wrong or revoked. */
  | 'unauthorized'
  /**
   * Another 4xx without a verdict (400, 404, 422…): it read the request and refused it. Our
   * request's fault (a payload it cannot parse), not the facilitator's: a client sending junk
   * must not make a facilitator look down.
   */
  | 'rejected'
  /** {@link neverReached}: refused, DNS, unreachable. */
  | 'unreachable'
  /** No answer within FACILITATOR_TIMEOUT_MS. */
  | 'timeout'
  /** Any other failure: 5xx, 408, 429, a connection reset, malformed answers. */
  | 'failed'

/**
 * Classifies a failed facilitator call.
 *
 * @example
 * failureKind(new VerifyError(400, { isValid: false, invalidReason: 'insufficient_funds' })) // 'verdict'
 * failureKind(new Error('Facilitator getSupported failed (401): {"errorType":"unauthorized"}')) // 'unauthorized'
 * failureKind(new Error('Facilitator verify failed (400): {"error":"bad payload"}')) // 'rejected'
 */
export function failureKind(error: unknown): FailureKind {
  const status = httpStatusOf(error)
  if ((error instanceof VerifyError || error instanceof SettleError) && error.statusCode < 500) {
    return error.statusCode === 401 || error.statusCode === 403 ? 'unauthorized' : 'verdict'
  }
  if (status === 401 || status === 403) return 'unauthorized'
  if (status !== undefined && status >= 400 && status < 500 && status !== 408 && status !== 429) {
    return 'rejected'
  }
  if (error instanceof FacilitatorTimeoutError) return 'timeout'
  if (neverReached(error)) return 'unreachable'
  return 'failed'
}

/**
 * A short reason for logs and `/health`, never the facilitator's response text (it may quote
 * payloads or internal hosts): `timeout`, `HTTP 503`, the cause's error code (`ECONNREFUSED`), or
 * the error's name.
 *
 * @example
 * shortReason(new FacilitatorTimeoutError('verify', 10_000)) // 'timeout'
 */
export function shortReason(error: unknown): string {
  if (error instanceof FacilitatorTimeoutError) return 'timeout'
  const status = httpStatusOf(error)
  if (status !== undefined) return `HTTP ${status}`
  const [code] = codesOf(error instanceof Error ? error.cause : undefined)
  if (code) return code
  return error instanceof Error ? error.name : typeof error
}

/**
 * Connection-level codes after the request may have been sent: the facilitator's side went away.
 * They say the facilitator (or the way to it) is failing, whatever the payment.
 */
const CONNECTION_CODES = new Set(['ECONNRESET', 'EPIPE', 'ECONNABORTED', 'UND_ERR_SOCKET'])

/** HTTP statuses by which a facilitator says it cannot serve at all, whatever the request. */
const DOWN_STATUSES = new Set([429, 502, 503, 504])

/**
 * Whether a failed call says the facilitator itself is down, so that its rails go to the next one
 * and `/health` reports it: no connection, a timeout, our credentials refused, a connection
 * dropped, or a status that says so (429, 502, 503, 504). A 500 or a malformed answer on one
 * payment does not: a payment could provoke it, and one payment must not take a facilitator out.
 *
 * @example marksDown(new FacilitatorTimeoutError('verify', 4000)) // true
 * marksDown(new Error('Facilitator verify failed (500): {"error":"…"}')) // false
 */
export function marksDown(error: unknown): boolean {
  const kind = failureKind(error)
  if (kind === 'unreachable' || kind === 'timeout' || kind === 'unauthorized') return true
  if (kind !== 'failed') return false
  const status = httpStatusOf(error)
  if (status !== undefined) return DOWN_STATUSES.has(status)
  return codesOf(error instanceof Error ? error.cause : undefined).some((code) =>
    CONNECTION_CODES.has(code),
  )
}

/**
 * What may be logged of a failed facilitator call: its {@link shortReason} and the length of its
 * message, never the text, which can quote what a payer sent.
 *
 * @example logSafe(new Error('Facilitator verify failed (500): {"error":"BigInt x"}')) // { reason: 'HTTP 500', detail_chars: 51 }
 */
export function logSafe(error: unknown): { reason: string; detail_chars: number } {
  return {
    reason: shortReason(error),
    detail_chars: error instanceof Error ? error.message.length : 0,
  }
}
