import { EventEmitter } from 'node:events'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { logger } from '../logger.js'
import {
  createConnectionCounts,
  limitConnections,
  REFUSAL_LOG_INTERVAL_MS,
  type RefusalReason,
} from './connection-limit.js'

// The counting per client, and its wiring to a server's `connection` and `drop` events, on
// stand-ins for a net.Server and its sockets (real sockets: src/http/node-server.e2e.test.ts and
// test/attacks.e2e.test.ts "round three: connections").

describe('createConnectionCounts', () => {
  it('admits up to the cap per client, refuses beyond, and admits again once one closes', () => {
    const counts = createConnectionCounts(2)
    const first = counts.admit('198.51.100.7')
    const second = counts.admit('198.51.100.7')
    expect(first).toBeTypeOf('function')
    expect(second).toBeTypeOf('function')
    expect(counts.admit('198.51.100.7')).toBeUndefined()
    expect(counts.of('198.51.100.7')).toBe(2)
    // Another client is counted apart.
    expect(counts.admit('198.51.100.8')).toBeTypeOf('function')
    first?.()
    expect(counts.of('198.51.100.7')).toBe(1)
    expect(counts.admit('198.51.100.7')).toBeTypeOf('function')
    expect(counts.admit('198.51.100.7')).toBeUndefined()
  })

  it('releases a place once however often its release is called', () => {
    const counts = createConnectionCounts(2)
    const release = counts.admit('203.0.113.1')
    counts.admit('203.0.113.1')
    release?.()
    release?.()
    expect(counts.of('203.0.113.1')).toBe(1)
  })

  it('counts an IPv4-mapped address as its IPv4 address, and IPv6 clients by /64', () => {
    const counts = createConnectionCounts(2)
    expect(counts.admit('::ffff:192.0.2.1')).toBeTypeOf('function')
    expect(counts.admit('192.0.2.1')).toBeTypeOf('function')
    expect(counts.admit('::FFFF:192.0.2.1')).toBeUndefined()
    // Two addresses of one /64 are one client; the next /64 is another.
    expect(counts.admit('2001:db8:0:1::5')).toBeTypeOf('function')
    expect(counts.admit('2001:DB8:0:1:ffff:ffff:ffff:ffff')).toBeTypeOf('function')
    expect(counts.admit('2001:db8:0:1:0:0:0:9')).toBeUndefined()
    expect(counts.admit('2001:db8:0:2::5')).toBeTypeOf('function')
    expect(counts.of('2001:db8:0:1::1')).toBe(2)
  })

  it('keeps no entry for a client without connections', () => {
    const counts = createConnectionCounts(3)
    const releases = ['10.0.0.1', '10.0.0.2', '10.0.0.2', undefined].map((a) => counts.admit(a))
    expect(counts.clients()).toBe(3)
    // An unknown peer (a socket already gone) is one client of its own.
    expect(counts.of(undefined)).toBe(1)
    for (const release of releases) release?.()
    expect(counts.clients()).toBe(0)
  })
})

/** A stand-in for an accepted socket: its peer, whether it was reset, its `close`. */
class FakeSocket extends EventEmitter {
  destroyed = false
  reset = false
  constructor(readonly remoteAddress: string | undefined) {
    super()
  }
  resetAndDestroy() {
    this.reset = true
    this.destroyed = true
    this.emit('close', false)
    return this
  }
  close() {
    this.destroyed = true
    this.emit('close', false)
  }
}

const serverStandIn = () => new EventEmitter() as EventEmitter & { maxConnections?: number }
/** The net.Server {@link limitConnections} takes. */
type Server = Parameters<typeof limitConnections>[0]

const accept = (server: EventEmitter, address: string | undefined) => {
  const socket = new FakeSocket(address)
  server.emit('connection', socket)
  return socket
}

describe('limitConnections', () => {
  afterEach(() => {
    vi.restoreAllMocks()
    vi.useRealTimers()
  })

  it('sets the cap in all and resets a connection beyond its client’s cap as it is accepted', () => {
    const server = serverStandIn()
    const refused: RefusalReason[] = []
    vi.spyOn(logger, 'warn').mockImplementation(() => undefined)
    limitConnections(server as unknown as Server, {
      perClient: 2,
      total: 100,
      onRefused: (reason) => refused.push(reason),
    })
    expect(server.maxConnections).toBe(100)
    const [a, b, c] = ['127.0.0.1', '127.0.0.1', '127.0.0.1'].map((x) => accept(server, x))
    expect([a?.reset, b?.reset, c?.reset]).toEqual([false, false, true])
    expect(refused).toEqual(['per_client'])
    const other = accept(server, '127.0.0.2')
    expect(other.reset).toBe(false)
    // A closed connection gives its place back.
    a?.close()
    expect(accept(server, '127.0.0.1').reset).toBe(false)
    expect(accept(server, '127.0.0.1').reset).toBe(true)
    // Node's own refusals beyond maxConnections are counted too.
    server.emit('drop', {})
    expect(refused).toEqual(['per_client', 'per_client', 'total'])
  })

  it('caps nothing per client with perClient 0 (behind a proxy)', () => {
    const server = serverStandIn()
    limitConnections(server as unknown as Server, { perClient: 0, total: 4096 })
    expect(server.maxConnections).toBe(4096)
    const sockets = Array.from({ length: 500 }, () => accept(server, '10.0.0.1'))
    expect(sockets.some((s) => s.reset)).toBe(false)
    expect(server.listenerCount('connection')).toBe(0)
  })

  it('logs the first refusal of an episode at once, then a count per window, never an address', () => {
    vi.useFakeTimers()
    const warn = vi.spyOn(logger, 'warn').mockImplementation(() => undefined)
    const server = serverStandIn()
    limitConnections(server as unknown as Server, { perClient: 1, total: 10 })
    accept(server, '192.0.2.50')
    for (let i = 0; i < 5; i++) accept(server, '192.0.2.50')
    server.emit('drop', {})
    expect(warn).toHaveBeenCalledTimes(1)
    expect(warn.mock.calls[0]).toEqual([
      { reason: 'per_client', max_connections: 10, max_connections_per_client: 1 },
      'connection refused at accept: its client holds MAX_CONNECTIONS_PER_CLIENT connections',
    ])
    vi.advanceTimersByTime(REFUSAL_LOG_INTERVAL_MS)
    expect(warn).toHaveBeenCalledTimes(2)
    expect(warn.mock.calls[1]).toEqual([
      {
        refused_per_client: 4,
        refused_total: 1,
        window_ms: REFUSAL_LOG_INTERVAL_MS,
        max_connections: 10,
        max_connections_per_client: 1,
      },
      'connections refused at accept',
    ])
    // A quiet window ends the episode; the next refusal is logged at once again.
    vi.advanceTimersByTime(2 * REFUSAL_LOG_INTERVAL_MS)
    expect(warn).toHaveBeenCalledTimes(2)
    server.emit('drop', {})
    expect(warn).toHaveBeenCalledTimes(3)
    expect(warn.mock.calls[2]?.[1]).toBe(
      'connection refused at accept: MAX_CONNECTIONS connections are open',
    )
    expect(JSON.stringify(warn.mock.calls)).not.toContain('192.0.2.50')
  })
})
