import type { Tool } from '@modelcontextprotocol/server'
import type { ToolDefinition } from '../../tools/types.js'
import { toolInputSchema } from '../json-schema.js'
import { usdcDecimal } from '../words.js'
import { toolOutputSchema } from './schemas.js'

/** `_meta` key of the price in a `tools/list` entry (a community convention, not x402 core). */
export const PRICE_META_KEY = 'x402/price'

/**
 * `_meta` key of the tool id in a `tools/list` entry: the `tool` claim of the tool's delivery
 * receipts (src/receipts), which a client checks a receipt against.
 */
export const TOOL_ID_META_KEY = 'payload-tools/tool'

/**
 * The price of one call, as advertised in `tools/list` under `_meta["x402/price"]`.
 *
 * @example
 * { amount: '1000', currency: 'USDC', decimals: 6, display: '0.001 USDC', scheme: 'exact',
 *   networks: ['eip155:8453', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'] }
 */
export interface AdvertisedPrice {
  /** Atomic USDC units (6 decimals), the `amount` of every offered rail. */
  amount: string
  currency: 'USDC'
  decimals: 6
  /** Human-readable, e.g. "0.001 USDC". */
  display: string
  /** x402 scheme of every offered rail. */
  scheme: 'exact'
  /** CAIP-2 networks of the configured rails, in advertising order. */
  networks: string[]
}

/** A configured rail, as far as the listing needs it. */
export interface ListedRail {
  /** CAIP-2 network identifier. */
  network: string
  /** Display name of the network, e.g. "Base". */
  name: string
}

/**
 * The `tools/list` entry of a catalogue tool: name, title, description ending with its price,
 * input and output JSON Schemas from the catalogue, read-only annotations, and in `_meta` the price
 * and the tool id (the `tool` claim of its receipts).
 *
 * @example
 * listTool(hashTool, [{ network: 'eip155:8453', name: 'Base' }]).description
 * // 'SHA-2 digest of UTF-8 text. Price: 0.001 USDC per call (x402 v2, scheme exact, on Base). …'
 */
export function listTool(tool: ToolDefinition, rails: readonly ListedRail[]): Tool {
  const display = `${usdcDecimal(tool.price)} USDC`
  const on = rails.map((r) => r.name).join(' or ')
  const price: AdvertisedPrice = {
    amount: tool.price,
    currency: 'USDC',
    decimals: 6,
    display,
    scheme: 'exact',
    networks: rails.map((r) => r.network),
  }
  return {
    name: tool.mcpName,
    title: tool.title,
    description:
      `${tool.description.trim()} Price: ${display} per call (x402 v2, scheme exact` +
      `${on ? `, on ${on}` : ''}). Call without payment to receive the PaymentRequired, then ` +
      'call again with the signed PaymentPayload in _meta["x402/payment"]; nothing is charged ' +
      'when the arguments are invalid or the tool fails.',
    inputSchema: toolInputSchema(tool) as Tool['inputSchema'],
    outputSchema: toolOutputSchema(tool) as Tool['outputSchema'],
    annotations: {
      title: tool.title,
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    },
    _meta: { [PRICE_META_KEY]: price, [TOOL_ID_META_KEY]: tool.id },
  }
}
