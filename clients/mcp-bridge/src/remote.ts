import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import type { RemoteService } from './bridge.js'
import { rateLimitAwareFetch } from './rate-limit.js'

/** Options of {@link connectRemote}. */
export interface RemoteOptions {
  /** The service's MCP endpoint, `<PAYLOAD_TOOLS_URL>/mcp`. */
  mcpUrl: URL
  /** The bridge's version, sent as `clientInfo.version`. */
  version: string
}

/**
 * The service's MCP endpoint through the official MCP SDK client (Streamable HTTP).
 *
 * Connects on first use. A failed connection is forgotten, so the next call tries again: the
 * bridge keeps serving (the spend tool, clear errors) while the service is down, and recovers
 * when it is back. The service is stateless (no `Mcp-Session-Id`), so one connection serves every
 * call and survives restarts of the service. An HTTP 429 rejects with a
 * `ServiceRateLimitedError` (rate-limit.ts, with the `Retry-After` seconds), any other failure
 * with the MCP SDK's error.
 *
 * @example
 * const remote = connectRemote({ mcpUrl: new URL('https://tools.example/mcp'), version: '0.1.0' })
 * const tools = await remote.listTools()
 */
export function connectRemote(options: RemoteOptions): RemoteService & { close(): Promise<void> } {
  let connecting: Promise<Client> | undefined

  function client(): Promise<Client> {
    connecting ??= (async () => {
      const c = new Client({ name: 'payload-tools-mcp', version: options.version })
      // A 429 becomes a ServiceRateLimitedError with its Retry-After (rate-limit.ts).
      await c.connect(
        new StreamableHTTPClientTransport(options.mcpUrl, { fetch: rateLimitAwareFetch() }),
      )
      return c
    })()
    connecting.catch(() => {
      connecting = undefined
    })
    return connecting
  }

  return {
    async listTools(): Promise<Tool[]> {
      const c = await client()
      const tools: Tool[] = []
      let cursor: string | undefined
      do {
        const page = await c.listTools(cursor === undefined ? {} : { cursor })
        tools.push(...page.tools)
        cursor = page.nextCursor
      } while (cursor !== undefined)
      return tools
    },
    async callTool(name, args, meta): Promise<CallToolResult> {
      const c = await client()
      return (await c.callTool({
        name,
        ...(args === undefined ? {} : { arguments: args }),
        ...(meta ? { _meta: meta } : {}),
      })) as CallToolResult
    },
    async close() {
      const pending = connecting
      connecting = undefined
      await (await pending?.catch(() => undefined))?.close()
    },
  }
}
