import type { Server } from 'node:http'
import { serve } from '@hono/node-server'

/**
 * Largest request head (request line plus headers) the HTTP server accepts: 128 KiB. Node's
 * default of 16 KiB answers 431 with an empty body before our code runs, so a client sending a
 * large PAYMENT-SIGNATURE would get no envelope and no reason; with this room the payment reader
 * refuses an over-long payment itself (402 `invalid_payment`, see MAX_PAYMENT_BYTES).
 */
export const MAX_HEADER_BYTES = 128 * 1024

/** Longest a client may take to send a whole request, head and body, in milliseconds. */
export const REQUEST_TIMEOUT_MS = 30_000

/** Longest a client may take to send a request's head, in milliseconds. */
export const HEADERS_TIMEOUT_MS = 10_000

/**
 * Most connections one instance holds open at once; beyond, new ones are closed at once. Each
 * costs a socket and its buffers whatever it sends, so that a client trickling many slow
 * requests cannot exhaust the process.
 */
export const MAX_CONNECTIONS = 4096

/**
 * The node:http options every `serve(...)` of the service passes as `serverOptions` (production,
 * dev demo, tests, benchmarks), so that all of them refuse the same requests.
 *
 * @example serve({ fetch: app.fetch, port: 8402, serverOptions: NODE_SERVER_OPTIONS })
 */
export const NODE_SERVER_OPTIONS = {
  maxHeaderSize: MAX_HEADER_BYTES,
  requestTimeout: REQUEST_TIMEOUT_MS,
  headersTimeout: HEADERS_TIMEOUT_MS,
  // How often Node looks for requests past those times (its default, 30 s, would double them).
  connectionsCheckingInterval: 1000,
} as const

/**
 * Serves `fetch` on `hostname:port` with {@link NODE_SERVER_OPTIONS} and {@link MAX_CONNECTIONS}
 * (`limits` replaces them, for tests); resolves once it listens.
 *
 * @example const server = await listen(service.app.fetch, { port: 8402, hostname: '127.0.0.1' })
 * @throws the listen error (port in use, address not available)
 */
export function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  options: { port: number; hostname: string },
  limits: { requestTimeout?: number; headersTimeout?: number; maxConnections?: number } = {},
): Promise<Server> {
  const { maxConnections = MAX_CONNECTIONS, ...times } = limits
  const server = serve({
    fetch,
    ...options,
    serverOptions: { ...NODE_SERVER_OPTIONS, ...times },
  }) as Server
  server.maxConnections = maxConnections
  return new Promise((resolve, reject) => {
    server.once('listening', () => resolve(server))
    server.once('error', reject)
  })
}
