import { ToolSchema } from '@modelcontextprotocol/sdk/types.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { validateDiscoveryExtension, validateDiscoveryExtensionSpec } from '@x402/extensions/bazaar'
import { describe, expect, it } from 'vitest'
import { catalog } from '../../tools/catalog.js'
import { bazaarExtension } from '../bazaar.js'
import { toolExample } from '../examples.js'
import { listTool } from './listing.js'

// The real catalogue through the MCP listing: every entry must make a valid MCP Tool, an
// outputSchema the official client can compile, and a bazaar extension both validators accept.

const rails = [
  { network: 'eip155:8453', name: 'Base' },
  { network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', name: 'Solana' },
]

describe('MCP listing of the catalogue', () => {
  const listed = catalog.map((tool) => listTool(tool, rails))

  it('names the 8 tools of SPEC 4.1 with their prices', () => {
    expect(
      listed.map((t) => [
        t.name,
        (t._meta?.['x402/price'] as { amount?: string } | undefined)?.amount,
      ]),
    ).toEqual([
      ['payload_hash', '1000'],
      ['payload_base64', '1000'],
      ['payload_hmac', '1000'],
      ['payload_json_validate', '1000'],
      ['payload_jwt_inspect', '1000'],
      ['payload_text_diff', '1000'],
      ['payload_pipeline', '3000'],
      ['payload_inspect', '3000'],
    ])
    expect(listed.map((t) => t.description?.match(/Price: ([0-9.]+ USDC) per call/)?.[1])).toEqual([
      ...Array(6).fill('0.001 USDC'),
      '0.003 USDC',
      '0.003 USDC',
    ])
  })

  it('gives every tool a valid MCP Tool whose output schema accepts its own example', () => {
    const ajv = new AjvJsonSchemaValidator()
    for (const [i, tool] of catalog.entries()) {
      const entry = listed[i]
      expect(ToolSchema.safeParse(entry).success, tool.mcpName).toBe(true)
      const validate = ajv.getValidator(entry?.outputSchema ?? {})
      expect(validate(toolExample(tool).response).errorMessage, tool.mcpName).toBeUndefined()
      expect(validate({ ok: true, result: 'not the result' }).valid, tool.mcpName).toBe(false)
    }
  })

  it('gives every tool a bazaar extension that both the SDK and the spec check accept', () => {
    for (const tool of catalog) {
      const { bazaar } = bazaarExtension(tool, 'mcp') as {
        bazaar: Parameters<typeof validateDiscoveryExtension>[0]
      }
      expect(validateDiscoveryExtension(bazaar), tool.mcpName).toEqual({ valid: true })
      expect(
        validateDiscoveryExtensionSpec(bazaar as unknown as Record<string, unknown>),
        tool.mcpName,
      ).toEqual({ valid: true })
    }
  })
})
