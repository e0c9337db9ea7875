import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { echoTool, fakeGate } from '../../test/helpers/fakes.js'
import { currentRequestId } from '../request-context.js'
import type { ToolDefinition } from '../tools/types.js'
import { createApp } from './app.js'
import { MAX_REQUEST_ID_LENGTH, requestIdHeader, requestIds } from './request-id.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

function app(): Hono {
  const app = new Hono()
  app.use(requestIds())
  // The id as a handler deep in the request sees it, after an await.
  app.get('/seen', async (c) => {
    await new Promise((resolve) => setTimeout(resolve, 1))
    return c.json({ seen: currentRequestId() })
  })
  // A handler answering with a Response of its own, as the MCP transport does.
  app.get('/raw', () => new Response('{}', { headers: { 'content-type': 'application/json' } }))
  return app
}

describe('requestIds', () => {
  it('keeps a well-formed caller id, in the response header and inside the request', async () => {
    for (const id of ['abc', 'A-Z_0=9', 'x'.repeat(MAX_REQUEST_ID_LENGTH)]) {
      const res = await app().request('/seen', { headers: { 'X-Request-Id': id } })
      expect(res.headers.get('x-request-id')).toBe(id)
      expect(await res.json()).toEqual({ seen: id })
    }
  })

  it('replaces a missing or malformed id with a new UUID', async () => {
    const ids = new Set<string>()
    for (const id of [
      undefined,
      '',
      'x'.repeat(MAX_REQUEST_ID_LENGTH + 1),
      'has space',
      'dots.not.allowed',
      '{"json":1}',
      'é',
    ]) {
      const res = await app().request(
        '/seen',
        id === undefined ? {} : { headers: { 'X-Request-Id': id } },
      )
      const given = res.headers.get('x-request-id') ?? ''
      expect(given).toMatch(UUID)
      expect(await res.json()).toEqual({ seen: given })
      ids.add(given)
    }
    expect(ids.size).toBe(7)
  })

  it('adds the header to a Response a handler made itself', async () => {
    const res = await app().request('/raw', { headers: { 'X-Request-Id': 'raw-1' } })
    expect(res.headers.get('x-request-id')).toBe('raw-1')
    expect(res.headers.get('content-type')).toBe('application/json')
  })

  it('leaves as it is a Response that wrote the id itself (requestIdHeader): no copy of it', async () => {
    // @hono/node-server's Response keeps plain-object headers until `.headers` is read, then
    // builds an undici Response; adding a header copies it again (body stream and every header):
    // with the paid routes' 6 KiB headers, a quarter of a paid call. This one counts the reads.
    let reads = 0
    const made: Response[] = []
    const plain = new Hono()
    plain.use(requestIds())
    plain.get('/plain', (c) => {
      const real = new Response('{}', {
        headers: { ...requestIdHeader(c), 'content-type': 'application/json' },
      })
      const watched = new Proxy(real, {
        get(target, name) {
          if (name === 'headers') reads++
          const value: unknown = Reflect.get(target, name, target)
          return typeof value === 'function' ? value.bind(target) : value
        },
      })
      made.push(watched)
      return watched
    })
    const res = await plain.request('/plain', { headers: { 'X-Request-Id': 'plain-1' } })
    expect(res).toBe(made[0])
    expect(reads).toBe(0)
    expect(res.headers.get('x-request-id')).toBe('plain-1')
    expect([...res.headers.keys()].filter((name) => name === 'x-request-id')).toHaveLength(1)
  })

  it('gives no header outside the middleware', async () => {
    const bare = new Hono()
    let header: Record<string, string> | undefined
    bare.get('/', (c) => {
      header = requestIdHeader(c)
      return c.text('ok')
    })
    await bare.request('/')
    expect(header).toEqual({})
  })

  it('puts the id in every answer of the app and in its failure envelopes', async () => {
    const service = createApp({
      gate: fakeGate().gate,
      tools: [echoTool as ToolDefinition],
      publicBaseUrl: 'https://tools.example',
    })
    const paid = await service.request('/echo', {
      method: 'POST',
      headers: { 'X-Request-Id': 'r-402' },
    })
    expect(paid.status).toBe(402)
    expect(paid.headers.get('x-request-id')).toBe('r-402')
    expect(((await paid.json()) as { request_id?: string }).request_id).toBe('r-402')
    const health = await service.request('/health')
    expect(health.headers.get('x-request-id')).toMatch(UUID)
    const wrong = await service.request('/echo', { headers: { 'X-Request-Id': 'r-405' } })
    expect(wrong.status).toBe(405)
    expect(await wrong.json()).toMatchObject({ code: 'method_not_allowed', request_id: 'r-405' })
  })
})
