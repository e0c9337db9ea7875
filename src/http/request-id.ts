import type { MiddlewareHandler } from 'hono'
import { requestId } from 'hono/request-id'
import { withRequestId } from '../request-context.js'

/** The header that carries the request id, both ways. */
export const REQUEST_ID_HEADER = 'X-Request-Id'

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
 * afterwards.
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
        if (!c.res.headers.has(REQUEST_ID_HEADER)) c.header(REQUEST_ID_HEADER, id)
      })
    })
  }
}
