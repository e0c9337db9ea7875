import { bazaarResourceServerExtension, declareDiscoveryExtension } from '@x402/extensions/bazaar'
import type { JsonSchema, ToolDefinition } from '../tools/types.js'
import { toolExample } from './examples.js'
import { type HoistedSchema, hoistDefs, toolInputSchema, toolResultSchema } from './json-schema.js'
import { componentStem } from './service-info.js'

/** The transport a paid call comes over: its bazaar entry says how to call the tool there. */
export type BazaarTransport = 'http' | 'mcp'

/**
 * The bazaar discovery extension (x402 `extensions.bazaar`) of a tool on one transport, built with
 * the SDK's `declareDiscoveryExtension`: how to call it and the `{ok: true, result}` its example
 * yields, with a `schema` that validates `info`.
 * - `http`: `POST` with `bodyType: "json"`, the example body and the body's schema, given its
 *   method with the SDK's `bazaarResourceServerExtension.enrichDeclaration` (which the SDK's own
 *   middleware calls per request; our gate does not);
 * - `mcp`: `{type: "mcp", tool, toolName, transport: "streamable-http", inputSchema, example}`.
 *   The x402 bazaar spec names the tool `tool`, the SDK (2.27) `toolName`: both are sent, and
 *   the schema requires both, so a facilitator following either one catalogues us.
 *
 * A pure function of the catalogue entry (examples run on a fixed clock): the payer's client echoes
 * it in the PaymentPayload, and the gate refuses a payment whose echo differs. Schemas embedded in
 * `schema` have their `$defs` hoisted to its root, where `#/$defs/…` references resolve.
 *
 * @example
 * bazaarExtension(hashTool, 'http')
 * // { bazaar: { info: { input: { type: 'http', method: 'POST', bodyType: 'json',
 * //   body: { input: 'hello world', … } }, output: { type: 'json', example: { ok: true, … } } },
 * //   schema: { $schema: '…/2020-12/schema', … } } }
 * @throws {Error} when the tool's first example is invalid (a catalogue bug, see {@link toolExample})
 */
export function bazaarExtension(
  tool: ToolDefinition,
  transport: BazaarTransport,
): Record<string, unknown> {
  return transport === 'http' ? httpBazaar(tool) : mcpBazaar(tool)
}

/** The root of a hoisted schema as a definition of its own, when it refers to itself. */
function selfDef(hoisted: HoistedSchema, rootName: string): Record<string, JsonSchema> {
  return hoisted.selfReferenced ? { [rootName]: hoisted.root } : {}
}

/** `output.schema`: the success envelope around the result's schema. */
function envelopeOf(result: JsonSchema): JsonSchema {
  return { properties: { ok: { const: true }, result }, required: ['ok', 'result'] }
}

function httpBazaar(tool: ToolDefinition): Record<string, unknown> {
  const example = toolExample(tool)
  const stem = componentStem(tool)
  const input = hoistDefs(toolInputSchema(tool), `${stem}Input`, '#/$defs/')
  const result = hoistDefs(toolResultSchema(tool), `${stem}Result`, '#/$defs/')
  const declared = declareDiscoveryExtension({
    bodyType: 'json',
    input: example.body,
    inputSchema: input.root,
    output: { example: example.response, schema: envelopeOf(result.root) },
  }).bazaar
  const enrich = bazaarResourceServerExtension.enrichDeclaration
  if (!declared || !enrich) throw new Error('@x402/extensions did not build a bazaar extension')
  const bazaar = enrich(declared, {
    method: 'POST',
    adapter: { getPath: () => tool.path },
  }) as { schema: JsonSchema }
  const defs = {
    ...input.defs,
    ...result.defs,
    ...selfDef(input, `${stem}Input`),
    ...selfDef(result, `${stem}Result`),
  }
  if (Object.keys(defs).length > 0) bazaar.schema = { ...bazaar.schema, $defs: defs }
  return { bazaar }
}

function mcpBazaar(tool: ToolDefinition): Record<string, unknown> {
  const example = toolExample(tool)
  const result = hoistDefs(toolResultSchema(tool), 'Result', '#/$defs/')
  const defs = { ...result.defs, ...selfDef(result, 'Result') }
  const { bazaar } = declareDiscoveryExtension({
    toolName: tool.mcpName,
    description: tool.description,
    transport: 'streamable-http',
    inputSchema: toolInputSchema(tool),
    example: example.body,
    output: { example: example.response, schema: envelopeOf(result.root) },
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
