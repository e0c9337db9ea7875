import type { CallToolResult } from '@modelcontextprotocol/client'
import type { BridgeConfig } from './config.js'
import type { Log } from './log.js'
import { REFUND_TOOL } from './refund-tool.js'
import { assemble } from './setup.js'
import { SPEND_TOOL } from './spend-tool.js'
import { UsageError } from './usage.js'

/**
 * Reads `call <tool> ['<json>']` (the words after `call`).
 *
 * @example
 * parseCallArgs(['hash', '{"input":"abc"}']) // { tool: 'hash', args: { input: 'abc' } }
 * @throws {UsageError} without a tool, with extra words, or when the JSON is not an object
 */
export function parseCallArgs(words: readonly string[]): {
  tool: string
  args: Record<string, unknown>
} {
  const [tool, json = '{}', ...extra] = words
  if (!tool) throw new UsageError('call: name the tool, e.g. call hash \'{"input":"abc"}\'')
  if (extra.length) throw new UsageError(`call: unexpected ${extra.join(' ')}`)
  let args: unknown
  try {
    args = JSON.parse(json)
  } catch {
    throw new UsageError(`call: the arguments are not JSON: ${json}`)
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw new UsageError('call: the arguments must be one JSON object')
  }
  return { tool, args: args as Record<string, unknown> }
}

/**
 * The listed tool a command-line name means: the exact MCP name, else the HTTP name
 * (`json-validate` → `payload_json_validate`, `payload-inspect` → `payload_inspect`).
 *
 * @returns the MCP name, or `undefined` when nothing matches
 */
export function resolveToolName(name: string, listed: readonly string[]): string | undefined {
  const snake = name.replace(/^\//, '').replaceAll('-', '_')
  return [name, snake, `payload_${snake}`].find((candidate) => listed.includes(candidate))
}

/** Where the command line writes. */
export interface Output {
  stdout(text: string): void
  stderr(text: string): void
}

/**
 * `payload-tools-mcp call`: pays for one call (the caps apply, the day file is shared with the
 * MCP server) and prints the result as JSON on stdout, then the settlement line. A refused call
 * prints its envelope on stdout and its message on stderr.
 *
 * @returns the exit code: 0 settled (or free), 1 refused, 2 usage error
 */
export async function runCall(
  words: readonly string[],
  config: BridgeConfig,
  log: Log,
  out: Output,
): Promise<number> {
  const { tool, args } = parseCallArgs(words)
  const { bridge, close } = await assemble(config, log)
  try {
    const listing = await bridge.listTools()
    const names = listing.tools.map((t) => t.name)
    const name = resolveToolName(tool, names)
    if (!name && !listing.complete) {
      // Let the bridge explain that the service is unreachable.
      return print(await bridge.callTool(tool, args), out)
    }
    if (!name) {
      const known = names.filter((n) => n !== SPEND_TOOL && n !== REFUND_TOOL).join(', ')
      out.stderr(`payload-tools-mcp: unknown tool ${tool}; the service lists ${known}\n`)
      return 2
    }
    return print(await bridge.callTool(name, args), out)
  } finally {
    await close()
  }
}

/**
 * `payload-tools-mcp refund`: the refund of the prepaid channel this user pays the service from
 * (what it holds and the service has not charged), printed as JSON with its transaction.
 *
 * @returns the exit code: 0 refunded, 1 refused (nothing to refund, the service refused)
 * @throws {UsageError} when the bridge pays by no channel (no Base key, or MAX_USDC_DEPOSIT=0)
 */
export async function runRefund(config: BridgeConfig, log: Log, out: Output): Promise<number> {
  if (!config.evmPrivateKey || config.depositCap === 0n) {
    throw new UsageError(
      'refund: the bridge pays by prepaid channel only with PAYER_PRIVATE_KEY set and ' +
        'MAX_USDC_DEPOSIT above 0',
    )
  }
  const { bridge, close } = await assemble(config, log)
  try {
    // The listing names a paid route of the service, where the refund is asked.
    await bridge.listTools()
    return print(await bridge.callTool(REFUND_TOOL, {}), out)
  } finally {
    await close()
  }
}

function print(result: CallToolResult, out: Output): number {
  const structured = result.structuredContent
  const json = structured === undefined ? undefined : JSON.stringify(structured)
  if (json !== undefined) out.stdout(`${JSON.stringify(structured, null, 2)}\n`)
  const lines = (result.content ?? [])
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
    .map((c) => c.text)
    .filter((text) => text !== json)
  for (const line of lines) (result.isError ? out.stderr : out.stdout)(`${line}\n`)
  return result.isError ? 1 : 0
}
