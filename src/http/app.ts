import { Hono } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { HTTPException } from 'hono/http-exception'
import { logger } from '../logger.js'
import type { PaymentGate } from '../payment/gate.js'
import type { ToolDefinition } from '../tools/types.js'
import { toHttpFailure } from './errors.js'
import { registerPaidRoutes } from './paid-routes.js'

/** Largest accepted request body, in bytes (1 MiB). */
export const MAX_BODY_BYTES = 1024 * 1024

/** What the HTTP app is built from. */
export interface AppDeps {
  gate: PaymentGate
  tools: readonly ToolDefinition[]
  publicBaseUrl: string
}

/**
 * Builds the Hono app: paid tool routes from the catalogue plus the free endpoints.
 *
 * @example
 * const app = createApp({ gate, tools: catalog, publicBaseUrl: 'http://127.0.0.1:8402' })
 * serve({ fetch: app.fetch, port: 8402 })
 */
export function createApp(deps: AppDeps): Hono {
  const app = new Hono()

  app.use(async (c, next) => {
    const started = performance.now()
    await next()
    // Method, path, status and time only: never bodies, headers or payers.
    logger.info(
      {
        method: c.req.method,
        path: c.req.path,
        status: c.res.status,
        ms: Math.round(performance.now() - started),
      },
      'request',
    )
  })

  app.use(
    bodyLimit({
      maxSize: MAX_BODY_BYTES,
      onError: () => {
        throw new HTTPException(413)
      },
    }),
  )

  app.get('/health', (c) => {
    const facilitator = deps.gate.link.status()
    const ok = facilitator.state === 'ok'
    return c.json({
      status: ok ? 'ok' : 'degraded',
      checks: { facilitator: facilitator.state, rails: facilitator.rails },
    })
  })

  registerPaidRoutes(app, deps)

  app.notFound((c) => {
    const failure = toHttpFailure(new HTTPException(404))
    return c.json(failure.body, failure.status)
  })
  app.onError((error, c) => {
    const failure = toHttpFailure(error)
    return c.json(failure.body, failure.status, failure.headers)
  })
  return app
}
