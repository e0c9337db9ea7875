import { Server, SUPPORTED_PROTOCOL_VERSIONS, type Transport } from '@modelcontextprotocol/server'
import { serveStdio } from '@modelcontextprotocol/server/stdio'
import type { Bridge } from './bridge.js'
import type { BridgeConfig } from './config.js'
import type { Log } from './log.js'
import { assemble, describeConfig } from './setup.js'
import { SPEND_TOOL } from './spend-tool.js'
import { VERSION } from './version.js'

/** How long the bridge waits before asking an unreachable service for its tools again. */
export const LISTING_RETRY_MS = 30_000

const instructions = (serviceUrl: string) =>
  `A local bridge to the Payload Tools service at ${serviceUrl}: deterministic payload ` +
  'utilities (hash, Base64, HMAC, JSON validation, JWT inspection, text diff, pipelines, ' +
  'payload detection), each paid per call in USDC. Call a tool once with its arguments: the ' +
  "bridge pays from the user's wallet with x402, within the user's spend caps, and returns the " +
  `result with the transaction. ${SPEND_TOOL} (free) reports what was spent and the caps.`

/**
 * MCP protocol revisions the bridge serves its stdio clients, newest first: 2026-07-28 and the v2
 * SDK's 2025-era list (2025-11-25, 2025-06-18 and the older ones the v1 bridge served), as the
 * service's `/mcp` does.
 */
export const BRIDGE_PROTOCOL_VERSIONS: readonly string[] = [
  '2026-07-28',
  ...SUPPORTED_PROTOCOL_VERSIONS,
]

/** The bridge as an MCP server, not yet serving a connection. */
export interface BridgeServer {
  /**
   * A new MCP server instance: `serveStdio` pins one per connection, of the era (2026-07-28, or
   * 2025-era after `initialize`) that the client's opening selects.
   */
  newServer(): Server
  /**
   * Serves one connection over `transport` (stdio by default), the era chosen by the client's
   * opening; resolves with its handle.
   */
  serve(transport?: Transport): { close(): Promise<void> }
  /**
   * Fetches the service's listing once (after a connection is served): if the service cannot
   * be reached, retries every `retryMs` and sends `notifications/tools/list_changed` once the
   * service's tools can be listed.
   */
  warmUp(): Promise<void>
  /** Stops the retries and closes the servers. */
  close(): Promise<void>
}

/**
 * MCP servers whose `tools/list` mirrors the service (plus the spend tool) and whose
 * `tools/call` pays, through `bridge`. While the service cannot be reached only the spend tool is
 * listed.
 *
 * @example
 * const bridgeServer = createBridgeServer(bridge, { serviceUrl, log })
 * bridgeServer.serve()
 * void bridgeServer.warmUp()
 */
export function createBridgeServer(
  bridge: Bridge,
  options: { serviceUrl: string; log: Log; retryMs?: number },
): BridgeServer {
  const retryMs = options.retryMs ?? LISTING_RETRY_MS
  const live = new Set<Server>()
  const handles = new Set<{ close(): Promise<void> }>()
  let listedAll = false
  let retry: NodeJS.Timeout | undefined
  let closed = false

  function newServer(): Server {
    const server = new Server(
      { name: 'payload-tools-mcp', title: 'Payload Tools (paying bridge)', version: VERSION },
      {
        capabilities: { tools: { listChanged: true } },
        instructions: instructions(options.serviceUrl),
        supportedProtocolVersions: [...BRIDGE_PROTOCOL_VERSIONS],
      },
    )
    // The low-level handlers: the service's schemas are listed as they are, and the arguments
    // reach the service unvalidated here (it checks them, for free, before any payment is signed).
    server.setRequestHandler('tools/list', async () => {
      const { tools, complete } = await bridge.listTools()
      if (complete) listedAll = true
      return { tools }
    })
    server.setRequestHandler('tools/call', (request) =>
      bridge.callTool(request.params.name, request.params.arguments),
    )
    live.add(server)
    const previous = server.onclose
    server.onclose = () => {
      live.delete(server)
      previous?.()
    }
    return server
  }

  async function warmUp(): Promise<void> {
    const { tools, complete } = await bridge.listTools()
    if (closed) return
    if (complete) {
      if (!listedAll) {
        listedAll = true
        options.log(`listing the service's ${tools.length - 1} tools`)
        await Promise.all([...live].map((server) => server.sendToolListChanged().catch(() => {})))
      }
      return
    }
    retry = setTimeout(() => void warmUp(), retryMs)
    retry.unref()
  }

  return {
    newServer,
    serve(transport) {
      const handle = serveStdio(newServer, transport ? { transport } : {})
      handles.add(handle)
      return handle
    },
    warmUp,
    async close() {
      closed = true
      clearTimeout(retry)
      await Promise.all([...handles].map((h) => h.close().catch(() => {})))
      await Promise.all([...live].map((s) => s.close().catch(() => {})))
    },
  }
}

/**
 * Serves the bridge over stdio until stdin closes (the MCP client went away).
 */
export async function runServer(config: BridgeConfig, log: Log): Promise<void> {
  const { bridge, wallet, close } = await assemble(config, log)
  const bridgeServer = createBridgeServer(bridge, { serviceUrl: config.serviceUrl, log })
  bridgeServer.serve()
  log(describeConfig(config, wallet))
  void bridgeServer.warmUp()
  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve)
    process.stdin.once('close', resolve)
  })
  await bridgeServer.close().catch(() => {})
  await close().catch(() => {})
}
