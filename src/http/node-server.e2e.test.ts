import type { AddressInfo } from 'node:net'
import { connect, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { listen } from './node-server.js'

// The limits of the HTTP server on real sockets, with small values: a request that trickles is
// cut, and connections beyond the cap are closed at once.

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

/** A raw connection, with what it received and when it was closed. */
function open(port: number) {
  const socket: Socket = connect(port, '127.0.0.1')
  let received = ''
  socket.on('data', (chunk) => {
    received += chunk.toString()
  })
  const closed = new Promise<number>((resolve) => {
    const at = performance.now()
    socket.on('close', () => resolve(performance.now() - at))
    socket.on('error', () => {})
  })
  return { socket, closed, received: () => received }
}

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
})
