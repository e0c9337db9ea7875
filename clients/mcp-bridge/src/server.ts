import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js'
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
 * Serves the bridge as an MCP server over stdio until stdin closes: `tools/list` mirrors the
 * service (plus the spend tool), `tools/call` pays. If the service cannot be reached at start,
 * only the spend tool is listed, the listing is retried every {@link LISTING_RETRY_MS}, and
 * `notifications/tools/list_changed` tells the client once the service's tools are back.
 */
export async function runServer(config: BridgeConfig, log: Log): Promise<void> {
  const { bridge, wallet, close } = await assemble(config, log)
  const server = new McpServer(
    { name: 'payload-tools-mcp', title: 'Payload Tools (paying bridge)', version: VERSION },
    { instructions: instructions(config.serviceUrl) },
  )
  // The low-level handlers: the service's schemas are listed as they are, and arguments reach
  // the service unvalidated here (it checks them, for free, before any payment is signed).
  server.server.registerCapabilities({ tools: { listChanged: true } })
  let listedAll = false
  let retry: NodeJS.Timeout | undefined
  async function refreshListing(): Promise<boolean> {
    const { tools, complete } = await bridge.listTools()
    if (complete && !listedAll) {
      listedAll = true
      clearTimeout(retry)
      log(`listing ${tools.length - 1} tools of the service`)
      await server.server.sendToolListChanged().catch(() => {})
    }
    if (!complete && !retry) {
      retry = setTimeout(() => {
        retry = undefined
        void refreshListing()
      }, LISTING_RETRY_MS)
      retry.unref()
    }
    return complete
  }
  server.server.setRequestHandler(ListToolsRequestSchema, async () => {
    const { tools, complete } = await bridge.listTools()
    if (complete) listedAll = true
    return { tools }
  })
  server.server.setRequestHandler(CallToolRequestSchema, (request) =>
    bridge.callTool(request.params.name, request.params.arguments),
  )
  await server.connect(new StdioServerTransport())
  log(describeConfig(config, wallet))
  void refreshListing()

  await new Promise<void>((resolve) => {
    process.stdin.once('end', resolve)
    process.stdin.once('close', resolve)
    server.server.onclose = () => resolve()
  })
  clearTimeout(retry)
  await server.close().catch(() => {})
  await close().catch(() => {})
}
