import { validateDiscoveryExtension, validateDiscoveryExtensionSpec } from '@x402/extensions/bazaar'
import { describe, expect, it } from 'vitest'
import { echoTool } from '../../test/helpers/fakes.js'
import type { ToolDefinition } from '../tools/types.js'
import { mcpBazaarExtension } from './bazaar.js'
import { toolInputSchema } from './schemas.js'

describe('mcpBazaarExtension', () => {
  const tool = echoTool as ToolDefinition
  const extension = mcpBazaarExtension(tool, toolInputSchema(tool))
  const bazaar = extension.bazaar as Parameters<typeof validateDiscoveryExtension>[0]

  it('describes the MCP tool with both the spec field `tool` and the SDK field `toolName`', () => {
    expect(bazaar.info).toEqual({
      input: {
        type: 'mcp',
        toolName: 'payload_echo',
        tool: 'payload_echo',
        description: 'Upper-cases text.',
        transport: 'streamable-http',
        inputSchema: toolInputSchema(tool),
        example: { text: 'abc' },
      },
      output: { type: 'json', example: { ok: true, result: { upper: 'ABC' } } },
    })
  })

  it('passes the SDK schema check and the bazaar spec check', () => {
    expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true })
    expect(validateDiscoveryExtensionSpec(bazaar as unknown as Record<string, unknown>)).toEqual({
      valid: true,
    })
  })

  it('requires `tool` in its schema, so info without it fails', () => {
    const { tool: _dropped, ...input } = bazaar.info.input as Record<string, unknown>
    const broken = { ...bazaar, info: { ...bazaar.info, input } } as typeof bazaar
    expect(validateDiscoveryExtension(broken).valid).toBe(false)
  })

  it('is the same object every time (the payer echoes it back)', () => {
    expect(mcpBazaarExtension(tool, toolInputSchema(tool))).toEqual(extension)
  })
})
