import type { Context, MiddlewareHandler } from 'hono'
import { requestId } from 'hono/request-id'
import { withRequestId } from '../request-context.js'

/** The header that carries the request id, both ways. */
export const REQUEST_ID_HEADER = 'X-Request-Id'

/** Context key: the handler's Response already carries the request id ({@link requestIdHeader}). */
const HEADER_WRITTEN = 'requestIdHeaderWritten'

/**
 * Longest caller-chosen request id kept, in characters. With hono's check (only `A-Z a-z 0-9 _ -
 * =`), a well-formed id is 1 to 128 of those; anything else is replaced.
 */
export const MAX_REQUEST_ID_LENGTH = 128

/**
 * Gives every request an id and every response an `X-Request-Id`: the caller's own id when well
 * formed (1 to {@link MAX_REQUEST_ID_LENGTH} characters of `A-Z a-z 0-9 _ - =`, hono's
 * `request-id` rule), else a new UUID (v4). The rest of the request runs inside
 * {@link withRequestId}, so that every log line it writes and every failure envelope it answers
 * (`request_id`) carry the same id, over HTTP and over MCP.
 *
 * Hono's `requestId` sets the header before the handler, which a handler returning a `Response` of
 * its own (the MCP transport's) replaces with its headers: the header is added to such a response
 * afterwards, unless the handler wrote it itself with {@link requestIdHeader} (the paid routes):
 * adding a header to a finished Response makes Hono copy it into a new undici Response, body
 * stream and every header (the large `PAYMENT-REQUIRED` checked character by character).
 *
 * @example
 * app.use(requestIds()) // first, so that the request log line carries the id too
 */
export function requestIds(): MiddlewareHandler {
  const assign = requestId({ limitLength: MAX_REQUEST_ID_LENGTH, headerName: REQUEST_ID_HEADER })
  return function requestIdContext(c, next) {
    return assign(c, () => {
      const id = c.get('requestId') as string
      return withRequestId(id, async () => {
        await next()
        if (c.get(HEADER_WRITTEN) === true) return
        if (!c.res.headers.has(REQUEST_ID_HEADER)) c.header(REQUEST_ID_HEADER, id)
      })
    })
  }
}

/**
 * The request id as a response header (`{ 'x-request-id': id }`), for a handler that builds its
 * Response with plain-object headers; {@link requestIds} then leaves that Response as it is.
 * Empty outside {@link requestIds} (an app without it, a unit test).
 *
 * @example
 * return new Response(body, { headers: { ...requestIdHeader(c), 'content-type': 'application/json' } })
 */
export function requestIdHeader(c: Context): Record<string, string> {
  const id = c.get('requestId') as string | undefined
  if (id === undefined) return {}
  c.set(HEADER_WRITTEN, true)
  return { 'x-request-id': id }
}
