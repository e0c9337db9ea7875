import { type Context, Hono, type MiddlewareHandler } from 'hono'
import { cors } from 'hono/cors'
import { secureHeaders } from 'hono/secure-headers'

/**
 * Response headers a browser script may read (`Access-Control-Expose-Headers`): the x402 headers,
 * so that browser x402 clients can pay, plus `Retry-After` and `Allow` of 503, 429 and 405
 * answers, and the `RateLimit-Policy` and `RateLimit` of a 429.
 */
export const EXPOSED_HEADERS = [
  'PAYMENT-REQUIRED',
  'PAYMENT-RESPONSE',
  'Retry-After',
  'Allow',
  'RateLimit-Policy',
  'RateLimit',
] as const

/**
 * Request headers a browser script may send (`Access-Control-Allow-Headers`): JSON bodies, the x402
 * payment, and the MCP Streamable HTTP headers.
 */
export const ALLOWED_HEADERS = [
  'Content-Type',
  'PAYMENT-SIGNATURE',
  'Accept',
  'Mcp-Protocol-Version',
  'Mcp-Session-Id',
  'Last-Event-ID',
] as const

/**
 * CORS for every path (Fetch standard, "CORS protocol"): any origin, no credentials (there are no
 * cookies or accounts; a payment authorizes one call), preflights answered 204 with the allowed
 * methods and headers, cached for 2 hours (the Chromium cap).
 *
 * @example
 * app.use(corsPolicy())
 */
export function corsPolicy(): MiddlewareHandler {
  return cors({
    origin: '*',
    allowMethods: ['GET', 'HEAD', 'POST', 'OPTIONS'],
    allowHeaders: [...ALLOWED_HEADERS],
    exposeHeaders: [...EXPOSED_HEADERS],
    maxAge: 7200,
  })
}

/**
 * Security headers on every response (hono `secure-headers`), with defaults fit for an API whose
 * answers are JSON and text:
 * - `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'; base-uri 'none';
 *   form-action 'none'`: nothing in a JSON or text answer may load or run. A handler that serves
 *   HTML sets its own, stricter-where-it-matters policy: `overwrite: false` keeps a header the
 *   handler already set;
 * - `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff`, `Referrer-Policy: no-referrer`,
 *   `Strict-Transport-Security` (ignored by browsers over plain http);
 * - `Cross-Origin-Resource-Policy: cross-origin`: the documents and the API are public and meant to
 *   be fetched from other origins (CORS decides what scripts may read).
 *
 * @example
 * app.use(securityHeaders())
 */
export function securityHeaders(): MiddlewareHandler {
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'none'"],
      frameAncestors: ["'none'"],
      baseUri: ["'none'"],
      formAction: ["'none'"],
    },
    crossOriginResourcePolicy: 'cross-origin',
    xFrameOptions: 'DENY',
    overwrite: false,
  })
}

/** {@link precomputedHeaders}: the middleware, and the same headers as a plain record. */
export type PrecomputedHeaders = MiddlewareHandler & {
  /**
   * The headers as a plain record (names lower-case), for a handler that builds the Response of
   * request `c` with plain-object headers itself (the paid routes: see `plainResponse` in
   * paid-routes.ts). Marks that Response as carrying them, so that a request the middleware left
   * alone (`selfServed`) gets none added afterwards.
   */
  recordFor(c: Context): Promise<Readonly<Record<string, string>>>
}

/** Options of {@link precomputedHeaders}. */
export interface PrecomputedHeadersOptions {
  /**
   * Requests whose handler writes {@link PrecomputedHeaders.recordFor} into a plain-header Response
   * of its own (the paid routes). The middleware sets nothing before such a handler (it would fill
   * an undici `Headers` that the handler's Response never uses); when the answer came from
   * elsewhere (a 429 of the rate limiter, an error), it adds the headers to it afterwards, keeping
   * any the answer already has.
   */
  selfServed?: (c: Context) => boolean
}

/** Context key: this request's Response carries the precomputed headers. */
const COMMON_WRITTEN = 'precomputedHeadersWritten'

/**
 * Applies, before the handler runs, the response headers that `middlewares` add to a plain
 * response, computed once by running them on a probe request. For middlewares whose headers do
 * not depend on the request, which holds for {@link securityHeaders} and for the non-preflight
 * part of {@link corsPolicy} (origin `*`).
 *
 * Why: hono's secure-headers and cors set their headers on `c.res` after (or around) `next()`,
 * which makes Hono rebuild the Response and @hono/node-server leave its fast path. The libraries
 * still decide which headers and values; preflights still go through {@link corsPolicy} itself.
 * A handler that sets the same header (an HTML page's own CSP) overrides the probe's value.
 *
 * @example
 * app.use(precomputedHeaders([securityHeaders(), corsPolicy()]))
 * app.options('*', corsPolicy())
 * @example
 * // The paid routes answer with recordFor(c) in their own headers:
 * precomputedHeaders(middlewares, { selfServed: (c) => c.req.method === 'POST' && paidPaths.has(c.req.path) })
 */
export function precomputedHeaders(
  middlewares: MiddlewareHandler[],
  options: PrecomputedHeadersOptions = {},
): PrecomputedHeaders {
  let headers: [string, string][] | undefined
  let capturing: Promise<[string, string][]> | undefined
  const capture = async (): Promise<[string, string][]> => {
    const probe = new Hono()
    for (const middleware of middlewares) probe.use(middleware)
    probe.get('/', (c) => c.body(null, 204))
    const res = await probe.request('/', { headers: { Origin: 'https://probe.invalid' } })
    return [...res.headers.entries()]
  }
  let record: Promise<Readonly<Record<string, string>>> | undefined
  const precomputed: MiddlewareHandler = async (c, next) => {
    if (!headers) {
      capturing ??= capture()
      headers = await capturing
    }
    if (options.selfServed?.(c)) {
      await next()
      // Unless the handler failed after asking for them: the error handler made the answer.
      if (c.get(COMMON_WRITTEN) === true && c.error === undefined) return
      for (const [name, value] of headers) if (!c.res.headers.has(name)) c.header(name, value)
      return
    }
    for (const [name, value] of headers) c.header(name, value)
    await next()
  }
  return Object.assign(precomputed, {
    recordFor(c: Context) {
      c.set(COMMON_WRITTEN, true)
      capturing ??= capture()
      record ??= capturing.then((entries) => Object.freeze(Object.fromEntries(entries)))
      return record
    },
  })
}
