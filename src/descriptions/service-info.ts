import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server'
import type { ToolDefinition } from '../tools/types.js'
import { networksInWords, usdcDecimal } from './words.js'

/** Name and interface version (SPEC 9) of the service, as every discovery surface states them. */
export const SERVICE = { name: 'Payload Tools', version: '0.3.0' } as const

/** A network as the prose names it: its display name and whether it is a test network. */
export interface NamedNetwork {
  /** e.g. "Base Sepolia" (a `Rail`'s `name`). */
  name: string
  testnet: boolean
  /** True when it is simulated on a local devnet (X402_DEVNET): no real money moves. */
  devnet?: true
}

/** A configured rail as the documents publish it; a payment `Rail` is one. */
export interface PublishedRail extends NamedNetwork {
  /** CAIP-2 network identifier. */
  network: string
  /** USDC contract (EVM) or mint (Solana). */
  asset: string
  /** Receiving address. */
  payTo: string
}

/**
 * The one-line summary of the service, naming the tools of the catalogue and the networks of the
 * rails (test networks marked as such).
 *
 * @example
 * serviceSummary([hashTool, base64Tool], rails)
 * // '2 deterministic payload utilities (Hash, Base64) for developers and AI agents, paid per call
 * //  in USDC with x402 v2 on Base and Solana.'
 */
export function serviceSummary(
  tools: readonly ToolDefinition[],
  rails: readonly NamedNetwork[],
): string {
  return (
    `${tools.length} deterministic payload utilities (${tools.map((t) => t.title).join(', ')}) ` +
    `for developers and AI agents, paid per call in USDC with x402 v2 on ${networksInWords(rails, 'and')}.`
  )
}

/** x402 protocol version and scheme of every paid call (SPEC 5). */
export const X402 = {
  version: 2,
  scheme: 'exact',
  /** HTTP header of the 402 response: Base64 of the PaymentRequired JSON. */
  requiredHeader: 'PAYMENT-REQUIRED',
  /** HTTP header of the paid retry: Base64 of the PaymentPayload JSON. */
  signatureHeader: 'PAYMENT-SIGNATURE',
  /** HTTP header of the 200 response: Base64 of the facilitator's SettleResponse JSON. */
  responseHeader: 'PAYMENT-RESPONSE',
  /** MCP `tools/call` params `_meta` key carrying the PaymentPayload (x402 MCP transport). */
  mcpPaymentMeta: 'x402/payment',
  /** MCP result `_meta` key carrying the SettleResponse. */
  mcpResponseMeta: 'x402/payment-response',
} as const

/** Path of the MCP endpoint (SPEC 4.3). */
export const MCP_PATH = '/mcp'

/**
 * The MCP protocol versions `/mcp` serves, newest first: 2026-07-28 (stateless: no `initialize`,
 * `server/discover`, the per-request `_meta` envelope and `Mcp-Method`/`Mcp-Name` headers) and the
 * 2025-era ones after the `initialize` handshake (2025-11-25, 2025-06-18 and older), all from
 * the v2 SDK (`@modelcontextprotocol/server`).
 */
export const MCP_PROTOCOL_VERSIONS: readonly string[] = [
  '2026-07-28',
  ...SUPPORTED_PROTOCOL_VERSIONS,
]

/**
 * The paying stdio MCP bridge (`clients/mcp-bridge/`, its own npm package) for MCP clients that
 * cannot sign x402 payments, as the docs name it. The service does not import the bridge: these
 * names are its public interface (package, bin, environment variables, local tool).
 */
export const MCP_BRIDGE = {
  /** npm package and bin name. */
  package: 'payload-tools-mcp',
  /**
   * Whether the package is on the npm registry. Until it is, `npx -y payload-tools-mcp` fails
   * (404) and the docs give the forms that work today: the bin of a clone, or a packed tarball.
   */
  published: false,
  /** The built bin inside a clone of the repository (the root `npm install` builds it). */
  cloneBin: 'clients/mcp-bridge/dist/bin.js',
  /** The file `npm pack -w payload-tools-mcp` writes at the root of a clone. */
  tarball: 'payload-tools-mcp-0.1.0.tgz',
  /** Base URL of the service to pay. */
  urlVariable: 'PAYLOAD_TOOLS_URL',
  /** The wallet: an EVM key pays on Base, a Solana secret key on Solana. */
  evmKeyVariable: 'PAYER_PRIVATE_KEY',
  solanaKeyVariable: 'PAYER_SOLANA_SECRET_KEY',
  /** The spend caps, decimal USDC, with their defaults (`undefined`: no cap by default). */
  caps: {
    MAX_USDC_PER_CALL: '0.01',
    MAX_USDC_PER_SESSION: '0.10',
    MAX_USDC_PER_DAY: undefined,
  } as Record<string, string | undefined>,
  /** The free local tool that reports what was spent. */
  spendTool: 'payload_tools_spend',
} as const

/**
 * The `command` and `args` of an `mcpServers` entry that starts the bridge today: `npx -y
 * payload-tools-mcp` once the package is published ({@link MCP_BRIDGE}.published), until then
 * Node on the bin of a clone.
 *
 * @example
 * bridgeLaunch() // { command: 'node', args: ['/path/to/payload-tools/clients/mcp-bridge/dist/bin.js'] }
 * @param clone - absolute path of a clone of the repository, as the user would write it
 */
export function bridgeLaunch(clone = '/path/to/payload-tools'): {
  command: string
  args: string[]
} {
  return MCP_BRIDGE.published
    ? { command: 'npx', args: ['-y', MCP_BRIDGE.package] }
    : { command: 'node', args: [`${clone}/${MCP_BRIDGE.cloneBin}`] }
}

/** A price in both notations. */
export interface Price {
  /** Atomic USDC units (6 decimals), e.g. "1000". */
  atomic: string
  /** USDC decimal string, e.g. "0.001". */
  usdc: string
}

/**
 * The price of one call of a tool.
 *
 * @example
 * toolPrice(hashTool) // { atomic: '1000', usdc: '0.001' }
 */
export function toolPrice(tool: ToolDefinition): Price {
  return { atomic: tool.price, usdc: usdcDecimal(tool.price) }
}

/**
 * The component-name stem of a tool: its id in PascalCase.
 *
 * @example
 * componentStem(jsonValidateTool) // 'JsonValidate'
 */
export function componentStem(tool: ToolDefinition): string {
  return tool.id
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('')
}
