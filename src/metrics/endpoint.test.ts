import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { bearerMatches, createMetricsApp, digestOf, metricsEndpoint } from './endpoint.js'
import { createMetrics } from './metrics.js'

const TOKEN = `${'a'.repeat(24)}B0._~+/-`
const metrics = createMetrics({ tools: ['hash'], networks: ['eip155:8453'] })

describe('bearerMatches', () => {
  it('accepts exactly "Bearer <token>" (scheme in any case) and nothing else', () => {
    const expected = digestOf(TOKEN)
    expect(bearerMatches(`Bearer ${TOKEN}`, expected)).toBe(true)
    expect(bearerMatches(`bearer ${TOKEN}`, expected)).toBe(true)
    expect(bearerMatches(undefined, expected)).toBe(false)
    expect(bearerMatches(TOKEN, expected)).toBe(false)
    expect(bearerMatches(`Basic ${TOKEN}`, expected)).toBe(false)
    expect(bearerMatches(`Bearer ${TOKEN}x`, expected)).toBe(false)
    expect(bearerMatches(`Bearer ${TOKEN.slice(1)}`, expected)).toBe(false)
    expect(bearerMatches('Bearer ', expected)).toBe(false)
  })
})

describe('metricsEndpoint', () => {
  const app = new Hono()
  app.use('/metrics', metricsEndpoint(metrics, { token: TOKEN }))
  app.notFound((c) => c.json({ ok: false, error: 'Not found', code: 'not_found' }, 404))

  it('serves the exposition to the token', async () => {
    const res = await app.request('/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8')
    expect(res.headers.get('cache-control')).toBe('no-store')
    expect(await res.text()).toContain('# TYPE x402_payments_total counter')
  })

  it('passes any other request on, to be answered as an unknown path', async () => {
    const post = await app.request('/metrics', {
      method: 'POST',
      headers: { Authorization: `Bearer ${TOKEN}` },
    })
    expect(post.status).toBe(404)
    for (const headers of [
      {},
      { Authorization: 'Bearer wrong' },
      { Authorization: TOKEN },
    ] as Record<string, string>[]) {
      const res = await app.request('/metrics', { headers })
      expect(res.status).toBe(404)
      expect(await res.json()).toEqual({ ok: false, error: 'Not found', code: 'not_found' })
    }
  })
})

describe('createMetricsApp', () => {
  it('serves /metrics to anyone without a token, and nothing else', async () => {
    const app = createMetricsApp(metrics, {})
    const res = await app.request('/metrics')
    expect(res.status).toBe(200)
    expect(await res.text()).toContain('# TYPE rate_limited_total counter')
    const other = await app.request('/stats')
    expect(other.status).toBe(404)
    expect(await other.json()).toEqual({ ok: false, error: 'Not found', code: 'not_found' })
  })

  it('requires the token when one is set', async () => {
    const app = createMetricsApp(metrics, { token: TOKEN })
    expect((await app.request('/metrics')).status).toBe(404)
    const res = await app.request('/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } })
    expect(res.status).toBe(200)
  })
})
