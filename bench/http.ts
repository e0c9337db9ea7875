import type { AddressInfo } from 'node:net'
import { Hono } from 'hono'
import { listen as listenAsService } from '../src/http/node-server.js'

/** A started HTTP server and its base URL. */
export interface Target {
  url: string
  close(): Promise<void>
}

/**
 * Serves a fetch handler on a loopback port (by default a free one), with the service's server
 * options and connection caps (`listen` of src/http/node-server.ts, as src/main.ts).
 */
export async function listen(
  fetch: (req: Request) => Response | Promise<Response>,
  port = 0,
): Promise<Target> {
  const server = await listenAsService(fetch, { port, hostname: '127.0.0.1' })
  const { port: bound } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${bound}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  }
}

/** The baseline: a bare Hono app on the same @hono/node-server, answering a small JSON. */
export function bareHono(): Hono {
  const app = new Hono()
  app.get('/bare', (c) => c.json({ ok: true }))
  // Reads and parses its JSON body, as every paid route must.
  app.post('/bare', async (c) => c.json({ ok: true, body: await c.req.json() }))
  return app
}
