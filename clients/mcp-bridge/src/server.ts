import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
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

/** The bridge as an MCP server, not yet connected to a transport. */
export interface BridgeServer {
  server: McpServer
  /**
   * Fetches the service's listing once (after the server is connected): if the service cannot
   * be reached, retries every `retryMs` and sends `notifications/tools/list_changed` once the
   * service's tools can be listed.
   */
  warmUp(): Promise<void>
  /** Stops the retries and closes the server. */
  close(): Promise<void>
}

/**
 * An MCP server whose `tools/list` mirrors the service (plus the spend tool) and whose
 * `tools/call` pays, through `bridge`. While the service cannot be reached only the spend tool is
 * listed.
 *
 * @example
 * const { server, warmUp } = createBridgeServer(bridge, { serviceUrl, log })
 * await server.connect(new StdioServerTransport())
 * void warmUp()
 */
export function createBridgeServer(
  bridge: Bridge,
  options: { serviceUrl: string; log: Log; retryMs?: number },
): BridgeServer {
  const retryMs = options.retryMs ?? LISTING_RETRY_MS
  const server = new McpServer(
    { name: 'payload-tools-mcp', title: 'Payload Tools (paying bridge)', version: VERSION },
    { instructions: instructions(options.serviceUrl) },
  )
  // The low-level handlers: the service's schemas are listed as they are, and the arguments reach
  // the service unvalidated here (it checks them, for free, before any payment is signed).
  server.server.registerCapabilities({ tools: { listChanged: true } })
  let listedAll = false
  let retry: NodeJS.Timeout | undefined
  let closed = false

  server.server.setRequestHandler(ListToolsRequestSchema, async () => {
    const { tools, complete } = await bridge.listTools()
    if (complete) listedAll = true
    return { tools }
  })
  server.server.setRequestHandler(CallToolRequestSchema, (request) =>
    bridge.callTool(request.params.name, request.params.arguments),
  )

  async function warmUp(): Promise<void> {
    const { tools, complete } = await bridge.listTools()
    if (closed) return
    if (complete) {
      if (!listedAll) {
        listedAll = true
        options.log(`listing the service's ${tools.length - 1} tools`)
        await server.server.sendToolListChanged().catch(() => {})
      }
      return
    }
    retry = setTimeout(() => void warmUp(), retryMs)
    retry.unref()
  }

  return {
    server,
    warmUp,
    async close() {
      closed = true
      clearTimeout(retry)
      await server.close()
    },
  }
}

/**
 * Serves the bridge over stdio until stdin closes (the MCP client went away).
 */
export async function runServer(config: BridgeConfig, log: Log): Promise<void> {
  const { bridge, wallet, close } = await assemble(config, log)
  const bridgeServer = createBridgeServer(bridge, { serviceUrl: config.serviceUrl, log })
  const { server } = bridgeServer
  await server.connect(new StdioServerTransport())
  log(describeConfig(config, wallet))
  void bridgeServer.warmUp()
  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve)
    process.stdin.once('close', resolve)
    server.server.onclose = () => resolve()
  })
  await bridgeServer.close().catch(() => {})
  await close().catch(() => {})
}
