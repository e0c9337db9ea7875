import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { connectRemote } from './remote.js'

// connectRemote against a real MCP server (the SDK's, over Streamable HTTP, stateless like the
// service's) on a loopback port, paging its tools/list.

const servers: Server[] = []
afterEach(async () => {
  for (const s of servers.splice(0)) {
    s.closeAllConnections()
    await new Promise((done) => s.close(done))
  }
})

const tool = (name: string): Tool => ({ name, inputSchema: { type: 'object' } })
const calls: { name: string; meta: unknown }[] = []

/** Serves a stateless MCP server on `port` (0: any); tools/list pages two tools at a time. */
async function serve(port = 0): Promise<number> {
  const all = ['a', 'b', 'c', 'd', 'e'].map(tool)
  const server = createServer(async (req, res) => {
    const mcp = new McpServer({ name: 'fake', version: '1' })
    mcp.server.registerCapabilities({ tools: {} })
    mcp.server.setRequestHandler(ListToolsRequestSchema, (r) => {
      const start = Number(r.params?.cursor ?? 0)
      const next = start + 2
      return {
        tools: all.slice(start, next),
        ...(next < all.length ? { nextCursor: String(next) } : {}),
      }
    })
    mcp.server.setRequestHandler(CallToolRequestSchema, (r) => {
      calls.push({ name: r.params.name, meta: r.params._meta })
      return { content: [{ type: 'text', text: `called ${r.params.name}` }] }
    })
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    })
    await mcp.connect(transport)
    await transport.handleRequest(req, res)
  })
  servers.push(server)
  await new Promise<void>((ready) => server.listen(port, '127.0.0.1', ready))
  return (server.address() as AddressInfo).port
}

describe('connectRemote', () => {
  it('lists every page of tools/list and passes arguments and _meta on tools/call', async () => {
    const port = await serve()
    const remote = connectRemote({ mcpUrl: new URL(`http://127.0.0.1:${port}/mcp`), version: '0' })
    expect((await remote.listTools()).map((t) => t.name)).toEqual(['a', 'b', 'c', 'd', 'e'])
    calls.length = 0
    const result = await remote.callTool('c', { x: 1 }, { 'x402/payment': { p: 1 } })
    expect(result.content).toEqual([{ type: 'text', text: 'called c' }])
    expect(calls).toEqual([{ name: 'c', meta: { 'x402/payment': { p: 1 } } }])
    await remote.close()
  })

  it('forgets a failed connection and connects when the service is back', async () => {
    const probe = await serve()
    const first = servers.pop() as Server
    await new Promise((done) => first.close(done))
    const remote = connectRemote({ mcpUrl: new URL(`http://127.0.0.1:${probe}/mcp`), version: '0' })
    await expect(remote.listTools()).rejects.toThrow()
    await serve(probe)
    expect(await remote.listTools()).toHaveLength(5)
    await remote.close()
  })
})
