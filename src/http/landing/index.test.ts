import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { Stats } from '../../telemetry/index.js'
import { TelemetryUnavailableError } from '../../telemetry/index.js'
import { catalog } from '../../tools/catalog.js'
import { securityHeaders } from '../security.js'
import { type LandingDeps, registerLanding } from './index.js'

const RAILS = [
  { id: 'evm', network: 'eip155:8453', name: 'Base', testnet: false },
  {
    id: 'solana',
    network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
    name: 'Solana',
    testnet: false,
  },
] as const

const zero = { atomic: '0', usdc: '0' }
const STATS: Stats = {
  paid_calls: 2,
  successful_paid_calls: 1,
  unique_payers: 1,
  repeat_payers: 0,
  repeat_paid_calls: 0,
  repeat_call_rate: 0,
  revenue: { lifetime: zero, last_24h: zero, last_7d: zero },
  networks: {},
  tools: {},
  channels: { calls: 0, revenue: zero, share_of_calls: 0 },
  daily: Array.from({ length: 7 }, (_, i) => ({
    date: `2025-06-${String(9 + i).padStart(2, '0')}`,
    calls: 0,
    revenue: zero,
  })),
  generated_at: '2025-06-15T12:00:00.000Z',
  window: { last_24h: 'a', last_7d: 'b', daily: 'c', cache_seconds: 2 },
}

/** The app-wide security headers, then the landing page, as `createApp` assembles them. */
function app(deps: Partial<LandingDeps> = {}): Hono {
  const hono = new Hono()
  hono.use(securityHeaders())
  registerLanding(hono, {
    tools: catalog,
    rails: RAILS,
    publicBaseUrl: 'http://127.0.0.1:8402',
    ...deps,
  })
  return hono
}

const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

const require = createRequire(import.meta.url)
const file = (path: string) => readFileSync(path)
const own = (name: string) => file(new URL(`./static/${name}`, import.meta.url).pathname)

describe('GET /', () => {
  it('serves the page with its own strict CSP, kept by the app-wide security headers', async () => {
    const res = await app({ stats: async () => STATS }).request('/')
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/html; charset=UTF-8')
    expect(res.headers.get('content-security-policy')).toBe(CSP)
    expect(res.headers.get('cache-control')).toBe('no-cache')
    expect(res.headers.get('x-frame-options')).toBe('DENY')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    const page = await res.text()
    expect(page).toContain('data-state="available"')
    expect(page).toContain('data-stat="paid_calls" data-format="count">2</dd>')
    expect(page).toContain('data-refresh-seconds="5"')
  })

  it.each([
    ['telemetry is not configured', {}],
    [
      'stats() rejects',
      { stats: () => Promise.reject(new TelemetryUnavailableError()) } as Partial<LandingDeps>,
    ],
  ])('renders the unavailable state when %s', async (_case, deps) => {
    const res = await app(deps).request('/')
    expect(res.status).toBe(200)
    const page = await res.text()
    expect(page).toContain('data-state="unavailable"')
    expect(page).toContain('data-stat="paid_calls" data-format="count">Unavailable</dd>')
  })

  it('does not wait longer than statsTimeoutMs for the figures', async () => {
    const started = performance.now()
    const res = await app({
      stats: () => new Promise<Stats>(() => {}),
      statsTimeoutMs: 50,
    }).request('/')
    const elapsed = performance.now() - started
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('data-state="unavailable"')
    // The figures never come: a page that waited for them would time the test out.
    expect(elapsed).toBeGreaterThanOrEqual(45)
  })

  it('answers HEAD without a body', async () => {
    const res = await app().request('/', { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('')
  })
})

describe('landing assets', () => {
  it.each([
    ['/assets/landing.js', 'text/javascript; charset=utf-8', () => own('landing.js')],
    ['/assets/landing.css', 'text/css; charset=utf-8', () => own('landing.css')],
    ['/assets/favicon.svg', 'image/svg+xml', () => own('favicon.svg')],
    [
      '/assets/uplot.min.js',
      'text/javascript; charset=utf-8',
      () => file(require.resolve('uplot/dist/uPlot.iife.min.js')),
    ],
    [
      '/assets/uplot.min.css',
      'text/css; charset=utf-8',
      () => file(require.resolve('uplot/dist/uPlot.min.css')),
    ],
  ])('serves %s from this origin, revalidated by ETag', async (path, type, bytes) => {
    const hono = app()
    const res = await hono.request(path)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe(type)
    expect(res.headers.get('cache-control')).toBe('public, max-age=300')
    // Buffer.equals: a byte comparison, much faster than a deep equality over 50 kB.
    expect(Buffer.from(await res.arrayBuffer()).equals(bytes())).toBe(true)
    const etag = res.headers.get('etag') ?? ''
    expect(etag).toMatch(/^"[0-9a-f]+"$/)
    const again = await hono.request(path, { headers: { 'If-None-Match': etag } })
    expect(again.status).toBe(304)
  })

  it('serves nothing else under /assets/', async () => {
    expect((await app().request('/assets/../package.json')).status).toBe(404)
    expect((await app().request('/assets/uPlot.esm.js')).status).toBe(404)
  })
})
