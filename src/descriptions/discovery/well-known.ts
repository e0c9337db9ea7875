import { z } from 'zod'
import type { ToolDefinition } from '../../tools/types.js'
import { SERVER_CARD_PATH } from '../mcp/server-card.js'
import { MCP_PATH, type NamedNetwork, serviceSummary, X402 } from '../service-info.js'
import { networksInWords, usdcDecimal } from '../words.js'

/** Body of GET /.well-known/x402, the x402 discovery document read by x402scan and others. */
export const wellKnownSchema = z
  .object({
    version: z
      .literal(1)
      .describe(
        "The version of this discovery document's format (1), not of the payment protocol: " +
          'payments use x402 v2 (`x402Version` 2 in every 402).',
      ),
    resources: z
      .array(z.string())
      .describe('Absolute URLs of the paid resources; each answers an unpaid POST with 402.'),
    ownershipProofs: z
      .array(z.string())
      .optional()
      .describe('Signatures over the origin by the payTo keys, when the operator supplies them.'),
    description: z.string(),
    instructions: z.string().describe('How to pay, for agents.'),
  })
  .describe('x402 payment discovery document.')

export type WellKnownX402 = z.infer<typeof wellKnownSchema>

export interface WellKnownOptions {
  tools: readonly ToolDefinition[]
  publicBaseUrl: string
  /** Operator-supplied signatures over the origin string by the payTo keys (passed verbatim). */
  ownershipProofs?: readonly string[] | undefined
  /** Configured rails, in advertising order: the text names their networks. */
  rails: readonly NamedNetwork[]
}

/**
 * Builds the x402 discovery document: `{version: 1, resources, ownershipProofs?, description,
 * instructions}`. `version` is the format of this document (the one x402 crawlers read), not the
 * protocol's: the instructions say so, as agents otherwise read it as x402 v1. Resources are bare URLs: POST is the method crawlers probe by default.
 *
 * @example
 * buildWellKnown({ tools: catalog, publicBaseUrl: 'https://tools.example', rails }).resources[0]
 * // 'https://tools.example/hash'
 */
export function buildWellKnown(options: WellKnownOptions): WellKnownX402 {
  const base = options.publicBaseUrl
  const prices = [...new Set(options.tools.map((t) => `${usdcDecimal(t.price)}`))]
  const proofs = options.ownershipProofs ?? []
  return {
    version: 1,
    resources: options.tools.map((tool) => `${base}${tool.path}`),
    ...(proofs.length > 0 ? { ownershipProofs: [...proofs] } : {}),
    description: serviceSummary(options.tools, options.rails),
    instructions:
      `This document's "version" 1 is its own format's; payments use x402 v${X402.version}. ` +
      `POST a JSON body to a resource. Without payment it answers 402 with a ${X402.requiredHeader} ` +
      `header (Base64 JSON, x402Version ${X402.version}, scheme ${X402.scheme}, one entry per rail: ` +
      `USDC on ${networksInWords(options.rails, 'or')}; prices ${prices.join(' or ')} USDC; on ` +
      'Base also batch-settlement, prepaid channels paid by voucher, while offered). ' +
      'Sign one rail with an x402 v2 ' +
      `client and repeat the same request with the ${X402.signatureHeader} header; the 200 answer ` +
      `is {ok: true, result} with a ${X402.responseHeader} receipt. An unpaid request that carries ` +
      'a body also gets input_check in the 402 body, so never pay for a request that would fail ' +
      `validation. Schemas and examples: ${base}/openapi.json and ${base}/llms.txt. Over MCP: ` +
      `${base}${MCP_PATH} (Streamable HTTP), described by its server card ${base}${SERVER_CARD_PATH} ` +
      '(experimental, SEP-2127 draft).',
  }
}
