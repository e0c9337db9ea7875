import type { AddressInfo } from 'node:net'
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import type { RefusalReason } from './connection-limit.js'
import { HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS, listen } from './node-server.js'

// The limits of the HTTP server on real sockets: a request that trickles is cut, connections
// beyond the caps (in all, per client) are closed at once, and a connection that sends nothing,
// or a byte, or goes idle, is closed within its timeout (these with the service's own values).

const servers: { close(): void; closeAllConnections(): void }[] = []
afterEach(() => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    s.close()
  }
})

async function serve(limits: Parameters<typeof listen>[2]) {
  const server = await listen(
    async (request) => new Response(await request.text()),
    { port: 0, hostname: '127.0.0.1' },
    limits,
  )
  servers.push(server)
  return (server.address() as AddressInfo).port
}

/** A raw connection from `from`, with what it received and when it was closed. */
function open(port: number, from = '127.0.0.1') {
  const socket: Socket = connect({ port, host: '127.0.0.1', localAddress: from })
  let received = ''
  socket.on('data', (chunk) => {
    received += chunk.toString()
  })
  let error: string | undefined
  const closed = new Promise<number>((resolve) => {
    const at = performance.now()
    socket.on('close', () => resolve(performance.now() - at))
    socket.on('error', (e: NodeJS.ErrnoException) => {
      error = e.code
    })
  })
  const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()))
  return { socket, closed, connected, received: () => received, error: () => error }
}

/** Resolves with `value` after `ms`: a bound on a hang. */
const resolveAfter = <T>(ms: number, value: T) =>
  new Promise<T>((resolve) => setTimeout(() => resolve(value), ms))

const GET = (connection: 'close' | 'keep-alive') =>
  `GET / HTTP/1.1\r\nHost: x\r\nConnection: ${connection}\r\n\r\n`

describe('the HTTP server', () => {
  it('cuts a request whose body trickles past the request timeout, with 408', async () => {
    const port = await serve({ requestTimeout: 500, headersTimeout: 400 })
    const c = open(port)
    c.socket.write('POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab')
    // A hang guard: Node checks every second, so the cut comes within about 1.5 s.
    const ms = await Promise.race([
      c.closed,
      new Promise<number>((r) => setTimeout(() => r(-1), 10_000)),
    ])
    expect(ms).toBeGreaterThan(0)
    expect(c.received()).toMatch(/^HTTP\/1\.1 408 /)
  }, 20_000)

  it('closes connections beyond its cap at once, and serves those within it', async () => {
    const port = await serve({ maxConnections: 2 })
    const kept = [open(port), open(port)]
    await new Promise((resolve) => setTimeout(resolve, 100))
    const third = open(port)
    expect(await third.closed).toBeGreaterThanOrEqual(0)
    expect(third.received()).toBe('')
    const first = kept[0]
    first?.socket.write(
      'POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok',
    )
    await first?.closed
    expect(first?.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\nok$/)
  })

  it('resets connections from one client beyond its cap as they are accepted, before reading them; other clients are served, and a closed one gives its place back', async () => {
    const refused: RefusalReason[] = []
    const port = await serve({ maxConnectionsPerClient: 3, onRefused: (r) => refused.push(r) })
    const held = [open(port), open(port), open(port)]
    await Promise.all(held.map((c) => c.connected))
    for (const c of held) c.socket.write('G')
    // Wait until the server has accepted the three (a refusal would show as a close).
    await resolveAfter(200, undefined)
    const beyond = open(port)
    beyond.socket.write(GET('close'))
    expect(await Promise.race([beyond.closed, resolveAfter(10_000, -1)])).toBeGreaterThanOrEqual(0)
    expect(beyond.received()).toBe('')
    // A reset: ECONNRESET, or EPIPE when the request was still being written.
    expect(['ECONNRESET', 'EPIPE']).toContain(beyond.error())
    expect(refused).toEqual(['per_client'])
    // Another address of this machine is another client.
    const other = open(port, '127.0.0.2')
    other.socket.write(GET('close'))
    await other.closed
    expect(other.received()).toMatch(/^HTTP\/1\.1 200 /)
    // One of the three closes: its client may open one more, and only one.
    held[0]?.socket.destroy()
    await held[0]?.closed
    await resolveAfter(200, undefined)
    const again = open(port)
    again.socket.write(GET('close'))
    await again.closed
    expect(again.received()).toMatch(/^HTTP\/1\.1 200 /)
    expect(refused).toEqual(['per_client'])
  })

  it('caps nothing per client with maxConnectionsPerClient 0', async () => {
    const port = await serve({ maxConnectionsPerClient: 0 })
    const many = Array.from({ length: 100 }, () => open(port))
    await Promise.all(many.map((c) => c.connected))
    for (const c of many) c.socket.write(GET('close'))
    await Promise.all(many.map((c) => c.closed))
    expect(many.filter((c) => /^HTTP\/1\.1 200 /.test(c.received()))).toHaveLength(100)
  })

  it('closes a connection that sends nothing, or one byte, with 408 within the headers timeout, and a kept-alive one idle for the keep-alive timeout', async () => {
    const port = await serve({})
    const silent = open(port)
    const oneByte = open(port)
    const idle = open(port)
    await Promise.all([silent.connected, oneByte.connected, idle.connected])
    oneByte.socket.write('G')
    idle.socket.write(GET('keep-alive'))
    // Node checks every second; the bound is one on a hang, far above the timeouts.
    const bound = Math.max(HEADERS_TIMEOUT_MS, KEEP_ALIVE_TIMEOUT_MS) + 10_000
    const [silentMs, oneByteMs, idleMs] = await Promise.all(
      [silent, oneByte, idle].map((c) => Promise.race([c.closed, resolveAfter(bound, -1)])),
    )
    expect(silentMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50)
    expect(silent.received()).toMatch(/^HTTP\/1\.1 408 /)
    expect(oneByteMs).toBeGreaterThanOrEqual(HEADERS_TIMEOUT_MS - 50)
    expect(oneByte.received()).toMatch(/^HTTP\/1\.1 408 /)
    expect(idleMs).toBeGreaterThanOrEqual(KEEP_ALIVE_TIMEOUT_MS - 50)
    expect(idle.received()).toMatch(/^HTTP\/1\.1 200 [\s\S]*\r\n\r\n$/)
  }, 30_000)

  it('takes a 1 MiB body sent slowly for longer than the headers timeout (an honest slow upload)', async () => {
    const port = await serve({})
    const c = open(port)
    await c.connected
    const chunk = 64 * 1024
    c.socket.write(
      `POST / HTTP/1.1\r\nHost: x\r\nContent-Length: ${16 * chunk}\r\nConnection: close\r\n\r\n`,
    )
    const started = performance.now()
    for (let i = 0; i < 16; i++) {
      await resolveAfter((HEADERS_TIMEOUT_MS + 1500) / 16, undefined)
      c.socket.write('a'.repeat(chunk))
    }
    expect(performance.now() - started).toBeGreaterThan(HEADERS_TIMEOUT_MS + 1000)
    await Promise.race([c.closed, resolveAfter(20_000, -1)])
    expect(c.received()).toMatch(/^HTTP\/1\.1 200 /)
    expect(c.received().endsWith('a'.repeat(chunk))).toBe(true)
    expect(c.received().length).toBeGreaterThan(16 * chunk)
  }, 40_000)
})
