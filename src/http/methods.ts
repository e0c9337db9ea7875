import type { Hono } from 'hono'
import type { NotFoundHandler } from 'hono/types'
import { MethodNotAllowedError, NotFoundError } from '../failures/errors.js'
import { toHttpFailure } from './failures.js'

/**
 * The methods a path answers, from the app's own route table, as an `Allow` header value (RFC 9110
 * 10.2.1): GET implies HEAD, and OPTIONS (the CORS preflight) is always answered. Empty when no
 * route has exactly this path.
 *
 * @example
 * allowedMethods(app, '/health') // ['GET', 'HEAD', 'OPTIONS']
 * allowedMethods(app, '/hash') // ['POST', 'OPTIONS']
 */
export function allowedMethods(app: Hono, path: string): string[] {
  const methods = new Set<string>()
  for (const route of app.routes) {
    if (route.path === path && route.method !== 'ALL') methods.add(route.method)
  }
  if (methods.size === 0) return []
  if (methods.has('GET')) methods.add('HEAD')
  methods.add('OPTIONS')
  const order = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']
  return [...methods].sort((a, b) => order.indexOf(a) - order.indexOf(b))
}

/**
 * The app's not-found handler, aware of methods: a request whose path exists for other methods gets
 * 405 `method_not_allowed` with `Allow` (RFC 9110 15.5.6); any other gets 404 `not_found`. Both
 * answer the failure envelope.
 *
 * Derived from the route table at request time, so routes that other modules register (the landing
 * page, /stats, /mcp) are covered without being listed here.
 *
 * @example
 * app.notFound(methodAwareNotFound(app))
 * // PUT /health -> 405, Allow: GET, HEAD, OPTIONS
 */
export function methodAwareNotFound(app: Hono): NotFoundHandler {
  return (c) => {
    const allow = allowedMethods(app, c.req.path)
    if (allow.length === 0) {
      const failure = toHttpFailure(new NotFoundError())
      return c.json(failure.body, failure.status)
    }
    const failure = toHttpFailure(new MethodNotAllowedError(c.req.method, c.req.path, allow))
    return c.json(failure.body, failure.status, failure.headers)
  }
}
