import type { Server, Socket } from 'node:net'
import { logger } from '../logger.js'
import { clientAddress, clientBucket } from './client-address.js'

/** How often, at most, refused connections are logged while refusals go on, in milliseconds. */
export const REFUSAL_LOG_INTERVAL_MS = 10_000

/** Open connections per client, counted in this instance's memory. */
export interface ConnectionCounts {
  /**
   * Takes a place for a connection from the TCP peer `address` in its client's count: IPv4 as it
   * is, IPv4-mapped IPv6 as IPv4, IPv6 by its /64 ({@link clientBucket}), as the rate limit counts
   * clients; an unknown address (a socket already gone) counts as one client, `unknown`.
   *
   * @returns the place's release (idempotent), or undefined when the client already holds its cap
   */
  admit(address: string | undefined): (() => void) | undefined
  /** Connections the client of `address` holds now. */
  of(address: string | undefined): number
  /** Clients holding at least one connection now. */
  clients(): number
}

/** The client a connection from the TCP peer `address` counts for (see {@link ConnectionCounts.admit}). */
function bucketOf(address: string | undefined): string {
  return clientBucket(clientAddress(address, undefined, 0))
}

/**
 * Counts open connections per client, at most `perClient` each; a client's entry is dropped when
 * its last connection closes, so memory follows the connections open, never the clients seen.
 *
 * @param perClient - the cap per client (MAX_CONNECTIONS_PER_CLIENT), at least 1
 * @example
 * const counts = createConnectionCounts(64)
 * const release = counts.admit(socket.remoteAddress) // undefined: refuse the connection
 */
export function createConnectionCounts(perClient: number): ConnectionCounts {
  const open = new Map<string, number>()
  return {
    admit(address) {
      const bucket = bucketOf(address)
      const held = open.get(bucket) ?? 0
      if (held >= perClient) return undefined
      open.set(bucket, held + 1)
      let released = false
      return () => {
        if (released) return
        released = true
        const left = (open.get(bucket) ?? 1) - 1
        if (left > 0) open.set(bucket, left)
        else open.delete(bucket)
      }
    },
    of: (address) => open.get(bucketOf(address)) ?? 0,
    clients: () => open.size,
  }
}

/** Why a connection was refused at accept. */
export type RefusalReason = 'per_client' | 'total'

/** Options of {@link limitConnections}. */
export interface ConnectionLimitOptions {
  /**
   * Most connections one client (IPv6 by /64) holds open at once (MAX_CONNECTIONS_PER_CLIENT);
   * 0: no cap per client (behind a proxy, where every connection is the proxy's).
   */
  perClient: number
  /** Most connections open at once in all (MAX_CONNECTIONS), set as the server's `maxConnections`. */
  total: number
  /** Called once per refused connection (tests). */
  onRefused?: (reason: RefusalReason) => void
}

/**
 * Caps the connections of `server` per client and in all (docs/limits.md "Connections"), so that
 * one address cannot take the places of the others:
 *
 * - beyond `total`, Node closes a new connection before it becomes a socket (`maxConnections`,
 *   its `drop` event);
 * - beyond `perClient` for its client, a new connection is reset (TCP RST) as it is accepted,
 *   before a byte of it is read or parsed, whatever it would send; a connection counts from its
 *   accept to its close, requests or not.
 *
 * Nothing waits on I/O here: the counts are this instance's own. Refusals are logged at `warn`,
 * the first of an episode at once and then a count every {@link REFUSAL_LOG_INTERVAL_MS} while
 * they go on; client addresses are never logged.
 *
 * @example
 * const server = serve({ fetch, port }) as Server
 * limitConnections(server, { perClient: 64, total: 4096 })
 */
export function limitConnections(server: Server, options: ConnectionLimitOptions): void {
  const { perClient, total } = options
  server.maxConnections = total
  const log = refusalLog({ max_connections: total, max_connections_per_client: perClient })
  const refused = (reason: RefusalReason) => {
    log(reason)
    options.onRefused?.(reason)
  }
  server.on('drop', () => refused('total'))
  if (perClient <= 0) return
  const counts = createConnectionCounts(perClient)
  // After node:http's own listener, which only sets the parser up: no byte is read before the
  // event loop turns, so a socket destroyed here was never parsed.
  server.on('connection', (socket: Socket) => {
    const release = counts.admit(socket.remoteAddress)
    if (release) {
      socket.once('close', release)
      return
    }
    // A reset rather than a FIN: the refused socket leaves no TIME_WAIT behind on our side.
    if (socket.destroyed) return
    socket.resetAndDestroy()
    refused('per_client')
  })
}

/**
 * The warn lines about refused connections: the first refusal of an episode at once, then the
 * refusals of each {@link REFUSAL_LOG_INTERVAL_MS} window, until a window passes without one.
 */
function refusalLog(caps: Record<string, number>): (reason: RefusalReason) => void {
  let window: Record<RefusalReason, number> | undefined
  const flush = () => {
    const counted = window as Record<RefusalReason, number>
    if (counted.per_client + counted.total === 0) {
      window = undefined
      return
    }
    logger.warn(
      {
        refused_per_client: counted.per_client,
        refused_total: counted.total,
        window_ms: REFUSAL_LOG_INTERVAL_MS,
        ...caps,
      },
      'connections refused at accept',
    )
    window = { per_client: 0, total: 0 }
    setTimeout(flush, REFUSAL_LOG_INTERVAL_MS).unref()
  }
  return (reason) => {
    if (window) {
      window[reason]++
      return
    }
    logger.warn(
      { reason, ...caps },
      reason === 'per_client'
        ? 'connection refused at accept: its client holds MAX_CONNECTIONS_PER_CLIENT connections'
        : 'connection refused at accept: MAX_CONNECTIONS connections are open',
    )
    window = { per_client: 0, total: 0 }
    setTimeout(flush, REFUSAL_LOG_INTERVAL_MS).unref()
  }
}
