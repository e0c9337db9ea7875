import {
  type CallToolResult,
  Client,
  StreamableHTTPClientTransport,
  type Tool,
} from '@modelcontextprotocol/client'
import type { RemoteService } from './bridge.js'
import { rateLimitAwareFetch, ServiceRateLimitedError } from './rate-limit.js'

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
      // Automatic negotiation: 2026-07-28 with a service that serves it, 2025-11-25 otherwise.
      const c = new Client(
        { name: 'payload-tools-mcp', version: options.version },
        { versionNegotiation: { mode: 'auto' } },
      )
      // A 429 becomes a ServiceRateLimitedError with its Retry-After (rate-limit.ts).
      await c
        .connect(
          new StreamableHTTPClientTransport(options.mcpUrl, { fetch: rateLimitAwareFetch() }),
        )
        .catch((error: unknown) => {
          // The version probe wraps the transport's error: a 429 stays a 429, and an unreachable
          // service reads as before ("fetch failed").
          throw rateLimitedCause(error) ?? probeCause(error) ?? error
        })
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

/** The ServiceRateLimitedError an error is, or was caused by (a few causes deep). */
function rateLimitedCause(error: unknown): ServiceRateLimitedError | undefined {
  let current = error
  for (let depth = 0; depth < 4 && current instanceof Error; depth += 1) {
    if (current instanceof ServiceRateLimitedError) return current
    current = current.cause
  }
  return undefined
}

/** The error a failed version-negotiation probe wraps, when it wraps one. */
function probeCause(error: unknown): Error | undefined {
  return error instanceof Error &&
    error.message.startsWith('Version negotiation probe failed: ') &&
    error.cause instanceof Error
    ? error.cause
    : undefined
}
