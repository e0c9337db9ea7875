// Failures the transports raise themselves (body limit, routing, the rate limit); describe.ts
// maps them with every other failure kind.

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
