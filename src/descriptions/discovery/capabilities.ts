import { z } from 'zod'
import {
  DELIVERY_RECEIPT,
  DELIVERY_RECEIPT_TYPE,
  deliveryClaimsSchema,
  didDocumentPath,
  JWKS_PATH,
  OFFER_RECEIPT,
  RECEIPTS_VERIFY_PATH,
} from '../../receipts/index.js'
import type { ToolDefinition } from '../../tools/types.js'
import { toolInputSchema } from '../json-schema.js'
import {
  componentStem,
  MCP_PATH,
  type PublishedRail,
  SERVICE,
  serviceSummary,
  toolPrice,
  X402,
} from '../service-info.js'

const price = z.object({
  atomic: z.string().describe('Atomic USDC units (6 decimals), the `amount` of every rail.'),
  usdc: z.string().describe('The same price as a USDC decimal string.'),
})

const fieldLimits = z.object({
  min_length: z.number().int().optional(),
  max_length: z.number().int().optional(),
  min_items: z.number().int().optional(),
  max_items: z.number().int().optional(),
})

/** Body of GET /capabilities. */
export const capabilitiesSchema = z
  .object({
    name: z.string(),
    version: z.string().describe('Interface version (the OpenAPI `info.version`).'),
    description: z.string(),
    transports: z.object({
      http: z.object({
        base_url: z.string(),
        method: z.literal('POST'),
        content_type: z.literal('application/json'),
      }),
      mcp: z.object({
        url: z.string(),
        transport: z.literal('streamable-http'),
        payment_meta: z.string().describe('`params._meta` key of the PaymentPayload.'),
        receipt_meta: z.string().describe('Result `_meta` key of the SettleResponse.'),
      }),
    }),
    x402: z.object({
      version: z.literal(2),
      scheme: z
        .literal('exact')
        .describe("The scheme every rail offers; `rails[].schemes` lists all of a rail's."),
      headers: z.object({ required: z.string(), signature: z.string(), response: z.string() }),
      rails: z
        .array(
          z.object({
            network: z.string().describe('CAIP-2 network identifier.'),
            name: z.string().describe('Display name of the network, e.g. "Base Sepolia".'),
            testnet: z
              .boolean()
              .describe('True on a test network: faucet USDC, no value (X402_NETWORK=testnet).'),
            devnet: z
              .literal(true)
              .optional()
              .describe(
                'Present on a local devnet (X402_DEVNET=on): the network is simulated on one machine, no real money moves.',
              ),
            asset: z.string().describe('USDC contract (EVM) or mint (Solana).'),
            payTo: z.string().describe('Receiving address.'),
            schemes: z
              .array(z.string())
              .describe(
                'The x402 schemes offered on the rail right now, in `accepts` order: `exact`, and on Base `batch-settlement` (prepaid channels: a deposit, then vouchers) while it is offered.',
              ),
            min_deposit: z
              .string()
              .optional()
              .describe(
                'With `batch-settlement`: the smallest deposit into a channel, atomic USDC (`extra.minDeposit`).',
              ),
          }),
        )
        .describe('Rails the facilitator settles right now; empty while it is unavailable.'),
    }),
    receipts: z
      .object({
        delivery: z.object({
          extension: z
            .literal(DELIVERY_RECEIPT)
            .describe('Key in the SettleResponse `extensions`; the JWS is in `info.receipt`.'),
          format: z.literal('jws').describe('Compact JWS (RFC 7515).'),
          alg: z.literal('EdDSA'),
          typ: z.literal(DELIVERY_RECEIPT_TYPE),
          claims: z.array(z.string()).describe('The claims of every delivery receipt.'),
        }),
        offer_receipt: z.object({
          extension: z.literal(OFFER_RECEIPT).describe('The official x402 extension.'),
          format: z.literal('jws'),
        }),
        jwks: z.string().describe('URL of the JWK Set of the signing keys, current and retired.'),
        did_document: z.string().describe('URL of the did:web document (offer-receipt kids).'),
        verify: z.string().describe('URL of the free verification (POST).'),
      })
      .describe('Signed receipts of every paid call (docs/receipts.md).'),
    limits: z.object({
      max_body_bytes: z.number().int().describe('Largest accepted request body, in bytes.'),
    }),
    tools: z.array(
      z.object({
        id: z.string(),
        title: z.string(),
        description: z.string(),
        method: z.literal('POST'),
        path: z.string(),
        url: z.string(),
        mcp_name: z.string(),
        operation_id: z.string(),
        price,
        input_schema: z.string().describe('URL of the request body schema in /openapi.json.'),
        result_schema: z.string().describe('URL of the `result` schema in /openapi.json.'),
        fields: z
          .record(z.string(), fieldLimits)
          .describe('Length and item bounds of the top-level body fields that have any.'),
        limits: z.array(z.string()).describe('Field limits in words.'),
      }),
    ),
    links: z.record(z.string(), z.string()),
  })
  .describe('What the service offers and how to pay for it, for agents.')

export type Capabilities = z.infer<typeof capabilitiesSchema>

export interface CapabilitiesOptions {
  tools: readonly ToolDefinition[]
  publicBaseUrl: string
  maxBodyBytes: number
  /** Configured rails: the description names their networks. */
  rails: readonly PublishedRail[]
}

/**
 * Length and item bounds of a tool's top-level body fields, read from its input JSON Schema (so
 * that e.g. the pipeline's 1..12 `operations` come from the Zod schema, not from a copy).
 *
 * @example
 * fieldBounds(pipelineTool) // { operations: { min_items: 1, max_items: 12 }, … }
 */
export function fieldBounds(tool: ToolDefinition): Record<string, z.infer<typeof fieldLimits>> {
  const properties = (toolInputSchema(tool).properties ?? {}) as Record<string, unknown>
  const keywords = {
    minLength: 'min_length',
    maxLength: 'max_length',
    minItems: 'min_items',
    maxItems: 'max_items',
  } as const
  const out: Record<string, z.infer<typeof fieldLimits>> = {}
  for (const [field, schema] of Object.entries(properties)) {
    if (schema === null || typeof schema !== 'object') continue
    const bounds: z.infer<typeof fieldLimits> = {}
    for (const [keyword, name] of Object.entries(keywords)) {
      const value = (schema as Record<string, unknown>)[keyword]
      if (typeof value === 'number') bounds[name] = value
    }
    if (Object.keys(bounds).length > 0) out[field] = bounds
  }
  return out
}

/** A live rail with the schemes offered on it now (`exact` when not given). */
export type LiveRail = PublishedRail & { schemes?: readonly string[]; minDeposit?: string }

/**
 * Builds a /capabilities factory: everything but the live rails is computed once.
 *
 * @example
 * const capabilities = buildCapabilities({ tools: catalog, publicBaseUrl, maxBodyBytes: 1048576, rails })
 * capabilities(state.liveRails).x402.rails
 * // [{ network: 'eip155:8453', name: 'Base', testnet: false, asset: '0x8335…', payTo: '0x…' }]
 */
export function buildCapabilities(
  options: CapabilitiesOptions,
): (liveRails: readonly LiveRail[]) => Capabilities {
  const base = options.publicBaseUrl
  const tools = options.tools.map((tool) => {
    const stem = componentStem(tool)
    return {
      id: tool.id,
      title: tool.title,
      description: tool.description,
      method: 'POST' as const,
      path: tool.path,
      url: `${base}${tool.path}`,
      mcp_name: tool.mcpName,
      operation_id: tool.operationId,
      price: toolPrice(tool),
      input_schema: `${base}/openapi.json#/components/schemas/${stem}Input`,
      result_schema: `${base}/openapi.json#/components/schemas/${stem}Result`,
      fields: fieldBounds(tool),
      limits: [...tool.limits],
    }
  })
  return (liveRails) => ({
    name: SERVICE.name,
    version: SERVICE.version,
    description: serviceSummary(options.tools, options.rails),
    transports: {
      http: { base_url: base, method: 'POST', content_type: 'application/json' },
      mcp: {
        url: `${base}${MCP_PATH}`,
        transport: 'streamable-http',
        payment_meta: X402.mcpPaymentMeta,
        receipt_meta: X402.mcpResponseMeta,
      },
    },
    x402: {
      version: X402.version,
      scheme: X402.scheme,
      headers: {
        required: X402.requiredHeader,
        signature: X402.signatureHeader,
        response: X402.responseHeader,
      },
      rails: liveRails.map(
        ({ network, name, testnet, devnet, asset, payTo, schemes, minDeposit }) => ({
          network,
          name,
          testnet,
          ...(devnet ? { devnet } : {}),
          asset,
          payTo,
          schemes: [...(schemes ?? [X402.scheme])],
          ...(minDeposit === undefined ? {} : { min_deposit: minDeposit }),
        }),
      ),
    },
    receipts: {
      delivery: {
        extension: DELIVERY_RECEIPT,
        format: 'jws',
        alg: 'EdDSA',
        typ: DELIVERY_RECEIPT_TYPE,
        claims: Object.keys(deliveryClaimsSchema.shape),
      },
      offer_receipt: { extension: OFFER_RECEIPT, format: 'jws' },
      jwks: `${base}${JWKS_PATH}`,
      did_document: `${base}${didDocumentPath(base)}`,
      verify: `${base}${RECEIPTS_VERIFY_PATH}`,
    },
    limits: { max_body_bytes: options.maxBodyBytes },
    tools,
    links: {
      openapi: `${base}/openapi.json`,
      llms_txt: `${base}/llms.txt`,
      well_known_x402: `${base}/.well-known/x402`,
      health: `${base}/health`,
      stats: `${base}/stats`,
      mcp: `${base}${MCP_PATH}`,
      receipt_keys: `${base}${JWKS_PATH}`,
      receipts_verify: `${base}${RECEIPTS_VERIFY_PATH}`,
    },
  })
}
