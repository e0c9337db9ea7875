import { createServer, type IncomingMessage, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Tool } from '@modelcontextprotocol/client'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import {
  CallToolRequestSchema,
  type CallToolResult,
  ListToolsRequestSchema,
  type Tool as V1Tool,
} from '@modelcontextprotocol/sdk/types.js'

// A stand-in for the service's MCP endpoint over real HTTP, for the unit tests of our own
// adapter (remote.ts, rate-limit.ts and the bridge on top of them): a stateless MCP server from
// the MCP SDK, behind a script that may refuse any JSON-RPC request with an HTTP status first,
// as the service's rate limiter refuses a whole request with 429 before MCP sees it.

/** An HTTP refusal the script answers instead of the MCP server. */
export interface Refusal {
  status: number
  headers?: Record<string, string>
  body: string
}

/** The 429 the service sends (src/http/rate-limit.ts of Payload Tools), with `Retry-After`. */
export const serviceRateLimited = (retryAfter?: string): Refusal => ({
  status: 429,
  headers: {
    'Content-Type': 'application/json',
    'Cache-Control': 'no-store',
    ...(retryAfter === undefined ? {} : { 'Retry-After': retryAfter }),
  },
  body: JSON.stringify({
    ok: false,
    error:
      'Too many unpaid requests: 120 per 60 s per client. Paid calls are not limited. Retry after Retry-After seconds.',
    code: 'rate_limited',
  }),
})

export interface ScriptedService {
  url: URL
  /** The JSON-RPC methods received, in order, refused ones included. */
  methods: string[]
  /**
   * Decides per JSON-RPC request (by method, e.g. `tools/call`) whether to refuse it; the
   * default serves every request.
   */
  refuse: (method: string) => Refusal | undefined
  close(): Promise<void>
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks).toString('utf8')
}

/** The default answer of {@link scriptedService}: a free result (nothing to pay). */
export const freeResult = (name: string): CallToolResult => ({
  content: [{ type: 'text', text: `free result of ${name}` }],
  structuredContent: { ok: true, result: name },
})

/** Serves `tools` on a loopback port; every `tools/call` answers `answer(name)`. */
export async function scriptedService(
  tools: Tool[],
  answer: (name: string) => CallToolResult = freeResult,
): Promise<ScriptedService> {
  const state: Pick<ScriptedService, 'methods' | 'refuse'> = {
    methods: [],
    refuse: () => undefined,
  }
  const server: Server = createServer(async (req, res) => {
    if (req.method !== 'POST') {
      res.writeHead(405, { Allow: 'POST' }).end()
      return
    }
    const text = await readBody(req)
    const method = (JSON.parse(text) as { method?: string }).method ?? ''
    state.methods.push(method)
    const refusal = state.refuse(method)
    if (refusal) {
      res.writeHead(refusal.status, refusal.headers ?? {}).end(refusal.body)
      return
    }
    const mcp = new McpServer({ name: 'scripted', version: '1' })
    mcp.server.registerCapabilities({ tools: {} })
    mcp.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools as V1Tool[] }))
    mcp.server.setRequestHandler(CallToolRequestSchema, (r) => answer(r.params.name))
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      enableJsonResponse: true,
    })
    await mcp.connect(transport)
    await transport.handleRequest(req, res, JSON.parse(text))
  })
  await new Promise<void>((ready) => server.listen(0, '127.0.0.1', ready))
  const { port } = server.address() as AddressInfo
  return Object.assign(state, {
    url: new URL(`http://127.0.0.1:${port}/mcp`),
    close: async () => {
      server.closeAllConnections()
      await new Promise((done) => server.close(done))
    },
  })
}
