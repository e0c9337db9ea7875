import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { corsPolicy, precomputedHeaders, securityHeaders } from './security.js'

const PAGE_CSP = "default-src 'self'; script-src 'self'"

function app() {
  const hono = new Hono()
  hono.use(precomputedHeaders([securityHeaders(), corsPolicy()]))
  hono.options('*', corsPolicy())
  hono.get('/json', (c) => c.json({ ok: true }))
  hono.get('/page', (c) => {
    c.header('Content-Security-Policy', PAGE_CSP)
    return c.html('<p>hi</p>')
  })
  hono.post('/paid', (c) =>
    c.json({ ok: false }, 402, { 'PAYMENT-REQUIRED': 'eyJ4NDAyVmVyc2lvbiI6Mn0=' }),
  )
  return hono
}

describe('corsPolicy', () => {
  it('answers a preflight for a paid POST with PAYMENT-SIGNATURE allowed', async () => {
    const res = await app().request('/paid', {
      method: 'OPTIONS',
      headers: {
        Origin: 'https://wallet.example',
        'Access-Control-Request-Method': 'POST',
        'Access-Control-Request-Headers': 'content-type, payment-signature',
      },
    })
    expect(res.status).toBe(204)
    expect(res.headers.get('Access-Control-Allow-Origin')).toBe('*')
    expect(res.headers.get('Access-Control-Allow-Methods')).toBe('GET,HEAD,POST,OPTIONS')
    expect(res.headers.get('Access-Control-Allow-Headers')?.split(',')).toEqual(
      expect.arrayContaining(['Content-Type', 'PAYMENT-SIGNATURE']),
    )
    expect(res.headers.get('Access-Control-Max-Age')).toBe('7200')
  })

  it('lets a browser read PAYMENT-REQUIRED and PAYMENT-RESPONSE', async () => {
    const res = await app().request('/paid', {
      method: 'POST',
      headers: { Origin: 'https://wallet.example' },
    })
    expect(res.status).toBe(402)
    expect(res.headers.get('Access-Control-Allow-Origin')).toBe('*')
    expect(res.headers.get('Access-Control-Expose-Headers')).toBe(
      'PAYMENT-REQUIRED,PAYMENT-RESPONSE,Retry-After,Allow,RateLimit-Policy,RateLimit',
    )
    expect(res.headers.get('PAYMENT-REQUIRED')).toBe('eyJ4NDAyVmVyc2lvbiI6Mn0=')
  })
})

describe('securityHeaders', () => {
  it('sets a deny-all CSP and the usual headers on JSON', async () => {
    const res = await app().request('/json')
    expect(res.headers.get('Content-Security-Policy')).toBe(
      "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'",
    )
    expect(res.headers.get('X-Content-Type-Options')).toBe('nosniff')
    expect(res.headers.get('X-Frame-Options')).toBe('DENY')
    expect(res.headers.get('Referrer-Policy')).toBe('no-referrer')
    expect(res.headers.get('Cross-Origin-Resource-Policy')).toBe('cross-origin')
    expect(res.headers.get('Strict-Transport-Security')).toBe('max-age=15552000; includeSubDomains')
  })

  it("keeps an HTML handler's own CSP and still adds the other headers", async () => {
    const res = await app().request('/page')
    expect(res.headers.get('Content-Security-Policy')).toBe(PAGE_CSP)
    expect(res.headers.get('X-Content-Type-Options')).toBe('nosniff')
    expect(res.headers.get('X-Frame-Options')).toBe('DENY')
  })
})

describe('precomputedHeaders', () => {
  it('sets exactly the headers the middlewares themselves add', async () => {
    const direct = new Hono()
    direct.use(securityHeaders())
    direct.use(corsPolicy())
    direct.get('/json', (c) => c.json({ ok: true }))
    const init = { headers: { Origin: 'https://wallet.example' } }
    const expected = Object.fromEntries((await direct.request('/json', init)).headers)
    const actual = Object.fromEntries((await app().request('/json', init)).headers)
    expect(actual).toEqual(expected)
    expect(Object.keys(actual).length).toBeGreaterThan(10)
  })
})

describe('precomputedHeaders with selfServed routes', () => {
  /** `/own` answers with recordFor(c) in its own plain headers; `/limited` is refused before it. */
  function selfServing() {
    const hono = new Hono()
    const direct = [securityHeaders(), corsPolicy()]
    const common = precomputedHeaders(direct, {
      selfServed: (c) =>
        c.req.method === 'POST' && ['/own', '/limited', '/fails'].includes(c.req.path),
    })
    hono.use(common)
    hono.use('/limited', async (c) =>
      c.json({ ok: false }, 429, { 'Cache-Control': 'no-store', 'X-Frame-Options': 'SAMEORIGIN' }),
    )
    let seenBefore: string | null = 'unset'
    hono.post('/own', async (c) => {
      // What the middleware set before the handler: nothing.
      seenBefore = c.res.headers.get('x-content-type-options')
      return new Response('{}', { status: 402, headers: { ...(await common.recordFor(c)) } })
    })
    hono.post('/fails', async (c) => {
      // Asked for the headers, then failed: the error handler's answer must still get them.
      await common.recordFor(c)
      throw new Error('boom')
    })
    hono.onError((_, c) => c.json({ ok: false }, 500))
    hono.get('/json', (c) => c.json({ ok: true }))
    return { hono, seenBefore: () => seenBefore }
  }

  it('sets nothing before a self-served handler, whose own Response carries exactly the usual headers', async () => {
    const { hono, seenBefore } = selfServing()
    const usual = Object.fromEntries((await hono.request('/json')).headers)
    const own = Object.fromEntries((await hono.request('/own', { method: 'POST' })).headers)
    expect(seenBefore()).toBeNull()
    const { 'content-type': _json, ...withoutType } = usual
    expect(own).toEqual({ ...withoutType, 'content-type': 'text/plain;charset=UTF-8' })
  })

  it('adds the headers after an answer made elsewhere on a self-served path, keeping its own values', async () => {
    const { hono } = selfServing()
    const usual = Object.fromEntries((await hono.request('/json')).headers)
    const limited = await hono.request('/limited', { method: 'POST' })
    expect(limited.status).toBe(429)
    expect(Object.fromEntries(limited.headers)).toEqual({
      ...usual,
      'cache-control': 'no-store',
      'x-frame-options': 'SAMEORIGIN',
    })
    const failed = await hono.request('/fails', { method: 'POST' })
    expect(failed.status).toBe(500)
    expect(Object.fromEntries(failed.headers)).toEqual(usual)
  })
})
