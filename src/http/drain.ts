import type { MiddlewareHandler } from 'hono'
import { ShuttingDownError } from '../payment/errors.js'
import { toHttpFailure } from './failures.js'

/** Counts the requests in flight and refuses new ones once the service shuts down. */
export interface Drain {
  /**
   * The first middleware of the app: while serving it only counts; once shutting down it answers
   * every new request `503 shutting_down`, and every response (in-flight ones included) carries
   * `Connection: close`, so that keep-alive clients leave.
   */
  middleware: MiddlewareHandler
  /** Requests being handled right now. */
  inFlight(): number
  /** Resolves when no request is in flight. */
  idle(): Promise<void>
}

/**
 * Creates the drain of the HTTP app.
 *
 * @param shuttingDown - whether the service is shutting down (`Lifecycle.shuttingDown`)
 * @example
 * const drain = createDrain(() => lifecycle.shuttingDown())
 * app.use(drain.middleware)
 */
export function createDrain(shuttingDown: () => boolean): Drain {
  let inFlight = 0
  let waiters: (() => void)[] = []
  const settled = () => {
    if (inFlight > 0) return
    const ready = waiters
    waiters = []
    for (const resolve of ready) resolve()
  }
  return {
    async middleware(c, next) {
      if (shuttingDown()) {
        const failure = toHttpFailure(new ShuttingDownError())
        return c.json(failure.body, failure.status, { ...failure.headers, Connection: 'close' })
      }
      inFlight++
      try {
        await next()
      } finally {
        inFlight--
        // A Response with immutable headers keeps them; Node closes the socket after it anyway
        // once the server is closing.
        if (shuttingDown()) {
          try {
            c.res.headers.set('Connection', 'close')
          } catch {}
        }
        settled()
      }
    },
    inFlight: () => inFlight,
    idle: () =>
      inFlight === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve)),
  }
}
