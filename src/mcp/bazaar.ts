import { declareDiscoveryExtension } from '@x402/extensions/bazaar'
import { toolExample } from '../descriptions/examples.js'
import { hoistDefs, toolResultSchema } from '../descriptions/json-schema.js'
import type { JsonSchema, ToolDefinition } from '../tools/types.js'

/**
 * The bazaar discovery extension (x402 `extensions.bazaar`) of an MCP tool: `info.input` is
 * `{type: "mcp", tool, toolName, description, transport: "streamable-http", inputSchema,
 * example}`, `info.output` the `{ok: true, result}` the example yields, and `schema` validates
 * `info`.
 *
 * Built with `declareDiscoveryExtension` from `@x402/extensions/bazaar`, plus one field: the x402
 * bazaar spec names the tool `input.tool`, while the SDK (2.27) writes and reads
 * `input.toolName`. We send both, with the same value, and widen the SDK's schema (which forbids
 * additional properties) to require both, so a facilitator following either one catalogues us.
 *
 * A pure function of the catalogue entry (examples run on a fixed clock): the payer's client
 * echoes it in the PaymentPayload, and the gate refuses a payment whose echo differs.
 *
 * @example
 * mcpBazaarExtension(hashTool, toolInputSchema(hashTool))
 * // { bazaar: { info: { input: { type: 'mcp', toolName: 'payload_hash', tool: 'payload_hash',
 * //   transport: 'streamable-http', inputSchema: {…}, example: {…} }, output: {…} }, schema } }
 * @throws {Error} when the tool's first example is invalid (a catalogue bug)
 */
export function mcpBazaarExtension(
  tool: ToolDefinition,
  inputSchema: JsonSchema,
): Record<string, unknown> {
  const example = toolExample(tool)
  const result = hoistDefs(toolResultSchema(tool), 'Result', '#/$defs/')
  const defs = { ...result.defs, ...(result.selfReferenced ? { Result: result.root } : {}) }
  const { bazaar } = declareDiscoveryExtension({
    toolName: tool.mcpName,
    description: tool.description,
    transport: 'streamable-http',
    inputSchema,
    example: example.body,
    output: {
      example: example.response,
      schema: {
        properties: { ok: { const: true }, result: result.root },
        required: ['ok', 'result'],
      },
    },
  })
  if (!bazaar) throw new Error('@x402/extensions did not build a bazaar extension')
  const info = bazaar.info as { input: Record<string, unknown> }
  const schema = bazaar.schema as {
    properties: { input: { properties: Record<string, unknown>; required: string[] } }
  }
  const input = schema.properties.input
  return {
    bazaar: {
      info: { ...info, input: { ...info.input, tool: tool.mcpName } },
      schema: {
        ...schema,
        properties: {
          ...schema.properties,
          input: {
            ...input,
            properties: { ...input.properties, tool: { type: 'string' } },
            required: [...input.required, 'tool'],
          },
        },
        ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
      },
    },
  }
}
