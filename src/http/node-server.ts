import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import type { Config } from '../config.js'
import { limitConnections, type RefusalReason } from './connection-limit.js'

/**
 * Largest request head (request line plus headers) the HTTP server accepts: 128 KiB. Node's
 * default of 16 KiB answers 431 with an empty body before our code runs, so a client sending a
 * large PAYMENT-SIGNATURE would get no envelope and no reason; with this room the payment reader
 * refuses an over-long payment itself (402 `invalid_payment`, see MAX_PAYMENT_BYTES).
 */
export const MAX_HEADER_BYTES = 128 * 1024

/**
 * Longest a client may take to send a whole request, head and body, in milliseconds: a 1 MiB body
 * fits on a link of about 300 kbit/s.
 */
export const REQUEST_TIMEOUT_MS = 30_000

/**
 * Longest a client may take to send a request's head, in milliseconds, counted on a new
 * connection from its accept: a connection that sends nothing, or trickles a byte now and then,
 * is answered 408 and closed within this time (and Node's check interval).
 */
export const HEADERS_TIMEOUT_MS = 5_000

/**
 * Longest a kept-alive connection may stay idle between two requests, in milliseconds. deploy/
 * nginx.conf keeps its idle upstream connections for less (`keepalive_timeout 4s`), so that an
 * instance never closes one just as nginx sends a request on it.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000

/**
 * Most connections one instance holds open at once (MAX_CONNECTIONS); beyond, new ones are
 * closed at once. Each costs a socket and its buffers whatever it sends.
 */
export const MAX_CONNECTIONS = 4096

/**
 * Most connections one client (an IPv4 address, an IPv6 /64) holds open at once
 * (MAX_CONNECTIONS_PER_CLIENT, when the service faces clients directly): beyond, a new one is
 * reset as it is accepted, so that one address cannot take the places of the others.
 */
export const MAX_CONNECTIONS_PER_CLIENT = 64

/**
 * The node:http options of the service's HTTP server ({@link listen} passes them, so that
 * production, the dev demo, tests and benchmarks refuse the same requests).
 */
export const NODE_SERVER_OPTIONS = {
  maxHeaderSize: MAX_HEADER_BYTES,
  requestTimeout: REQUEST_TIMEOUT_MS,
  headersTimeout: HEADERS_TIMEOUT_MS,
  // How often Node looks for requests past those times (its default, 30 s, would double them).
  connectionsCheckingInterval: 1000,
} as const

/** What {@link listen} may change of its defaults (tests, and the configuration's caps). */
export interface ServerLimits {
  /** Milliseconds; default {@link REQUEST_TIMEOUT_MS}. */
  requestTimeout?: number
  /** Milliseconds; default {@link HEADERS_TIMEOUT_MS}. */
  headersTimeout?: number
  /** Milliseconds; default {@link KEEP_ALIVE_TIMEOUT_MS}. */
  keepAliveTimeout?: number
  /** MAX_CONNECTIONS; default {@link MAX_CONNECTIONS}. */
  maxConnections?: number
  /** MAX_CONNECTIONS_PER_CLIENT, 0 for none; default {@link MAX_CONNECTIONS_PER_CLIENT}. */
  maxConnectionsPerClient?: number
  /** Called once per connection refused at accept (tests). */
  onRefused?: (reason: RefusalReason) => void
}

/**
 * The connection caps of a configuration (MAX_CONNECTIONS, MAX_CONNECTIONS_PER_CLIENT), as
 * {@link listen} takes them.
 *
 * @example await listen(service.app.fetch, { port, hostname }, connectionCaps(config))
 */
export function connectionCaps(
  config: Pick<Config, 'maxConnections' | 'maxConnectionsPerClient'>,
): ServerLimits {
  return {
    maxConnections: config.maxConnections,
    maxConnectionsPerClient: config.maxConnectionsPerClient,
  }
}

/**
 * Serves `fetch` on `hostname:port` with {@link NODE_SERVER_OPTIONS}, the keep-alive timeout and
 * the connection caps per client and in all (src/http/connection-limit.ts); `limits` replaces
 * them. Resolves once it listens. Every HTTP server of the service is started here: production
 * (src/main.ts), the dev demo, the tests' `startService` and the benchmarks.
 *
 * @example const server = await listen(service.app.fetch, { port: 8402, hostname: '127.0.0.1' })
 * @throws the listen error (port in use, address not available)
 */
export function listen(
  fetch: (request: Request) => Response | Promise<Response>,
  options: { port: number; hostname: string },
  limits: ServerLimits = {},
): Promise<Server> {
  const {
    maxConnections = MAX_CONNECTIONS,
    maxConnectionsPerClient = MAX_CONNECTIONS_PER_CLIENT,
    keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS,
    onRefused,
    ...times
  } = limits
  const server = serve({
    fetch,
    ...options,
    serverOptions: { ...NODE_SERVER_OPTIONS, ...times },
  }) as Server
  server.keepAliveTimeout = keepAliveTimeout
  limitConnections(server, {
    perClient: maxConnectionsPerClient,
    total: maxConnections,
    ...(onRefused ? { onRefused } : {}),
  })
  return new Promise((resolve, reject) => {
    server.once('listening', () => resolve(server))
    server.once('error', reject)
  })
}
