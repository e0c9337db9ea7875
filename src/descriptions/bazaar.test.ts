import { validateDiscoveryExtension, validateDiscoveryExtensionSpec } from '@x402/extensions/bazaar'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { echoTool } from '../../test/helpers/fakes.js'
import { catalog } from '../tools/catalog.js'
import type { ToolDefinition } from '../tools/types.js'
import { bazaarExtension } from './bazaar.js'
import { EXAMPLE_NOW_SECONDS } from './examples.js'
import { toolInputSchema } from './json-schema.js'

type Bazaar = Parameters<typeof validateDiscoveryExtension>[0]

function bazaarOf(tool: ToolDefinition) {
  const { bazaar } = bazaarExtension(tool, 'http') as { bazaar: Bazaar }
  return bazaar
}

describe('bazaarExtension over HTTP', () => {
  it.each(catalog.map((tool) => [tool.id, tool] as const))(
    '%s: POST with the example body and its real result, valid for the SDK validator',
    (_id, tool) => {
      const bazaar = bazaarOf(tool)
      expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true })
      const info = bazaar.info as {
        input: Record<string, unknown>
        output: { type: string; example: unknown }
      }
      expect(info.input).toEqual({
        type: 'http',
        method: 'POST',
        bodyType: 'json',
        body: tool.examples[0],
      })
      const parsed = tool.input.parse(tool.examples[0])
      const result = tool.run(parsed, { nowSeconds: () => EXAMPLE_NOW_SECONDS })
      expect(info.output).toEqual({
        type: 'json',
        example: { ok: true, result: JSON.parse(JSON.stringify(result)) },
      })
    },
  )

  it('the schema rejects a body that breaks the input schema', () => {
    const bazaar = bazaarOf(catalog[0] as ToolDefinition)
    const broken = structuredClone(bazaar)
    ;(broken.info.input as Record<string, unknown>).body = { unexpected: true }
    const verdict = validateDiscoveryExtension(broken)
    expect(verdict.valid).toBe(false)
  })

  it('is identical on every build, so the echo of a paid retry matches', () => {
    for (const tool of catalog) {
      expect(JSON.stringify(bazaarExtension(tool, 'http'))).toBe(
        JSON.stringify(bazaarExtension(tool, 'http')),
      )
    }
  })

  it('hoists $defs of a recursive body schema to the root of the bazaar schema', () => {
    const json: z.ZodType = z.lazy(() =>
      z.union([z.string(), z.number(), z.array(json), z.record(z.string(), json)]),
    )
    const tree: ToolDefinition = {
      id: 'tree',
      path: '/tree',
      mcpName: 'payload_tree',
      operationId: 'tree',
      price: '1000',
      title: 'Tree',
      description: 'Counts nodes.',
      input: z.object({ value: json }).strict(),
      output: z.object({ copy: json }),
      examples: [{ value: { a: [1, 'b'] } }],
      limits: [],
      check: () => {},
      run: (input) => ({ copy: (input as { value: unknown }).value }),
    }
    const bazaar = bazaarOf(tree)
    const schema = bazaar.schema as unknown as { $defs: Record<string, unknown> }
    expect(Object.keys(schema.$defs).sort()).toEqual(['TreeInput_schema0', 'TreeResult_schema0'])
    expect(validateDiscoveryExtension(bazaar)).toEqual({ valid: true })

    const broken = structuredClone(bazaar)
    ;(broken.info.input as Record<string, unknown>).body = { value: { a: [true] } }
    expect(validateDiscoveryExtension(broken).valid).toBe(false)
  })
})

describe('bazaarExtension over MCP', () => {
  const tool = echoTool as ToolDefinition
  const extension = bazaarExtension(tool, 'mcp')
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
    expect(bazaarExtension(tool, 'mcp')).toEqual(extension)
  })
})
