/**
 * The longest `Retry-After` the bridge waits out by itself, once, before it retries a refused
 * unpaid request: 10 seconds. Longer waits are reported to the MCP client instead (the call gets
 * `rate_limited` with `retry_after`), because MCP clients time a tool call out (the MCP SDK after
 * 60 s by default) and a user waiting on an assistant should be told, not kept waiting.
 */
export const MAX_RETRY_AFTER_SECONDS = 10

/**
 * The service answered HTTP 429: too many unpaid requests from this client (the service's
 * `rate_limited`, docs/errors.md of Payload Tools). Raised by {@link rateLimitAwareFetch} in place
 * of the MCP SDK's generic HTTP error, which drops the response headers.
 */
export class ServiceRateLimitedError extends Error {
  override readonly name = 'ServiceRateLimitedError'
  constructor(
    /** The service's own explanation (the `error` of its envelope), or the status line. */
    readonly detail: string,
    /** Seconds to wait before retrying, from `Retry-After`; undefined when absent or unreadable. */
    readonly retryAfterSeconds: number | undefined,
  ) {
    super(`HTTP 429 rate_limited: ${detail}`)
  }
}

/**
 * Reads a `Retry-After` header (RFC 9110 section 10.2.3): delay-seconds or an HTTP-date.
 *
 * @example
 * parseRetryAfter('5') // 5
 * parseRetryAfter('Wed, 21 Oct 2015 07:28:05 GMT', new Date('2015-10-21T07:28:00Z')) // 5
 * @param now - the clock an HTTP-date is measured against
 * @returns whole seconds to wait (0 for a date in the past), or undefined when absent or malformed
 */
export function parseRetryAfter(
  value: string | null | undefined,
  now: Date = new Date(),
): number | undefined {
  const text = value?.trim()
  if (!text) return undefined
  if (/^\d+$/.test(text)) return Number(text)
  // An HTTP-date names its day and month; Date.parse would also read "-1" or "1.5" as dates.
  if (!/^[A-Za-z]{3}, /.test(text)) return undefined
  const at = Date.parse(text)
  if (Number.isNaN(at)) return undefined
  return Math.max(0, Math.ceil((at - now.getTime()) / 1000))
}

/** The service's explanation in a 429 body: the `error` of its JSON envelope, else the text. */
function explanation(body: string, statusText: string): string {
  try {
    const envelope = JSON.parse(body) as { error?: unknown }
    if (typeof envelope.error === 'string' && envelope.error) return envelope.error
  } catch {
    // Not JSON (a proxy's page): fall back to the text, cut short.
  }
  const text = body.trim().slice(0, 200)
  return text || statusText || 'Too Many Requests'
}

/**
 * `fetch` for the MCP SDK's Streamable HTTP transport that turns an HTTP 429 into a
 * {@link ServiceRateLimitedError} carrying `Retry-After`. The SDK would throw a generic error
 * whose message only quotes the body, so the bridge could neither tell a refusal from an outage
 * nor know how long to wait.
 *
 * @example
 * new StreamableHTTPClientTransport(url, { fetch: rateLimitAwareFetch(fetch) })
 * @throws {ServiceRateLimitedError} for every 429 answer
 */
export function rateLimitAwareFetch(inner: typeof fetch = fetch): typeof fetch {
  return async (input, init) => {
    const response = await inner(input, init)
    if (response.status !== 429) return response
    const body = await response.text().catch(() => '')
    throw new ServiceRateLimitedError(
      explanation(body, response.statusText),
      parseRetryAfter(response.headers.get('retry-after')),
    )
  }
}
