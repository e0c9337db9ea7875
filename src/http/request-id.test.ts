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

  it('answers a Response that wrote the id itself (requestIdHeader) as written: one id, its status, headers and body', async () => {
    // Whether the middleware copies such a Response is a matter of speed (npm run bench, "Paid
    // calls against the peer"); what the client gets is checked here.
    const plain = new Hono()
    plain.use(requestIds())
    plain.get(
      '/plain',
      (c) =>
        new Response('{"ok":true}', {
          status: 201,
          headers: { ...requestIdHeader(c), 'content-type': 'application/json', 'x-kept': 'yes' },
        }),
    )
    const res = await plain.request('/plain', { headers: { 'X-Request-Id': 'plain-1' } })
    expect(res.status).toBe(201)
    expect([...res.headers]).toEqual([
      ['content-type', 'application/json'],
      ['x-kept', 'yes'],
      ['x-request-id', 'plain-1'],
    ])
    expect(await res.text()).toBe('{"ok":true}')
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
