import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import autocannon from 'autocannon'
import { Hono } from 'hono'
import { table } from './measure.js'

/** A started HTTP server and its base URL. */
export interface Target {
  url: string
  close(): Promise<void>
}

/** Serves a fetch handler on a free loopback port. */
export async function listen(
  fetch: (req: Request) => Response | Promise<Response>,
): Promise<Target> {
  const server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch, port: 0, hostname: '127.0.0.1' }, () => resolve(s))
  })
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
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

/** One autocannon run: median and p99 latency (ms) and requests per second. */
export interface LoadResult {
  name: string
  p50: number
  p99: number
  rps: number
  non2xx: number
}

/**
 * Loads a URL with autocannon (after a short warm-up).
 *
 * @param seconds - measured duration
 */
export async function load(
  name: string,
  options: { url: string; method?: 'GET' | 'POST'; body?: string; connections?: number },
  seconds: number,
): Promise<LoadResult> {
  const base = {
    url: options.url,
    method: options.method ?? 'GET',
    connections: options.connections ?? 10,
    ...(options.body
      ? { body: options.body, headers: { 'content-type': 'application/json' } }
      : {}),
  }
  await autocannon({ ...base, duration: 1 })
  const result = await autocannon({ ...base, duration: seconds })
  return {
    name,
    p50: result.latency.p50,
    p99: result.latency.p99,
    rps: Math.round(result.requests.average),
    non2xx: result.non2xx,
  }
}

/** Renders load results with ratios to the first (baseline) row. */
export function loadTable(results: LoadResult[]): string {
  const base = results[0]
  if (!base) return ''
  return table(
    ['endpoint', 'p50 latency', 'p99 latency', 'req/s', 'p50 / baseline', 'req/s / baseline'],
    results.map((r) => [
      r.name,
      `${r.p50} ms`,
      `${r.p99} ms`,
      r.rps,
      `${(r.p50 / Math.max(base.p50, 0.5)).toFixed(2)}×`,
      `${(r.rps / base.rps).toFixed(2)}`,
    ]),
  )
}
