import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { allowedMethods, methodAwareNotFound } from './methods.js'

function app() {
  const hono = new Hono()
  hono.use(async (_c, next) => next())
  hono.get('/health', (c) => c.text('ok'))
  hono.post('/hash', (c) => c.text('paid'))
  hono.notFound(methodAwareNotFound(hono))
  return hono
}

describe('allowedMethods', () => {
  it('derives Allow from the route table, ignoring middleware', () => {
    const hono = app()
    expect(allowedMethods(hono, '/health')).toEqual(['GET', 'HEAD', 'OPTIONS'])
    expect(allowedMethods(hono, '/hash')).toEqual(['POST', 'OPTIONS'])
    expect(allowedMethods(hono, '/nothing')).toEqual([])
  })
})

describe('methodAwareNotFound', () => {
  it.each([
    ['PUT', '/health', 'GET, HEAD, OPTIONS'],
    ['DELETE', '/health', 'GET, HEAD, OPTIONS'],
    ['POST', '/health', 'GET, HEAD, OPTIONS'],
    ['GET', '/hash', 'POST, OPTIONS'],
    ['PATCH', '/hash', 'POST, OPTIONS'],
  ])('%s %s answers 405 with Allow: %s and the failure envelope', async (method, path, allow) => {
    const res = await app().request(path, { method })
    expect(res.status).toBe(405)
    expect(res.headers.get('Allow')).toBe(allow)
    expect(await res.json()).toEqual({
      ok: false,
      error: `${method} is not allowed on ${path}; use ${allow}`,
      code: 'method_not_allowed',
    })
  })

  it('answers HEAD on a POST-only path with 405 and no body', async () => {
    const res = await app().request('/hash', { method: 'HEAD' })
    expect(res.status).toBe(405)
    expect(res.headers.get('Allow')).toBe('POST, OPTIONS')
    expect(await res.text()).toBe('')
  })

  it('answers an unknown path with 404 not_found', async () => {
    const res = await app().request('/nothing', { method: 'PUT' })
    expect(res.status).toBe(404)
    expect(res.headers.get('Allow')).toBeNull()
    expect(await res.json()).toEqual({ ok: false, error: 'Not found', code: 'not_found' })
  })
})
