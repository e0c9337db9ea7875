import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { createService } from '../src/service.js'

// Request ids over MCP, on the assembled service (no facilitator configured: every tools/call
// fails closed, with the failure envelope as its structuredContent).

const service = createService(loadConfig({ TOOL_WORKERS: '1' }))
afterAll(() => service.close())

const call = (headers: Record<string, string>) =>
  service.app.request('/mcp', {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'payload_hash', arguments: { input: 'abc' } },
    }),
  })

describe('request ids over MCP', () => {
  it('answers with the caller id in the header, the structuredContent and the _meta envelope', async () => {
    const res = await call({ 'X-Request-Id': 'mcp-req-1' })
    expect(res.status).toBe(200)
    expect(res.headers.get('x-request-id')).toBe('mcp-req-1')
    const { result } = (await res.json()) as {
      result: { isError: boolean; structuredContent: unknown; _meta: Record<string, unknown> }
    }
    const envelope = {
      ok: false,
      error: 'No payment facilitator is configured',
      code: 'facilitator_unavailable',
      request_id: 'mcp-req-1',
    }
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual(envelope)
    expect(result._meta['payload-tools/failure']).toEqual(envelope)
  })

  it('gives each request without a usable id a new one', async () => {
    const ids = new Set<string>()
    for (const headers of [{}, { 'X-Request-Id': 'bad id' }] as Record<string, string>[]) {
      const res = await call(headers)
      const id = res.headers.get('x-request-id') ?? ''
      const { result } = (await res.json()) as {
        result: { structuredContent: { request_id: string } }
      }
      expect(result.structuredContent.request_id).toBe(id)
      ids.add(id)
    }
    expect(ids.size).toBe(2)
  })
})
