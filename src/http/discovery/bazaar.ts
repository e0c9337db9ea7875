import { bazaarResourceServerExtension, declareDiscoveryExtension } from '@x402/extensions/bazaar'
import { toolExample } from '../../descriptions/examples.js'
import { hoistDefs, toolInputSchema, toolResultSchema } from '../../descriptions/json-schema.js'
import { componentStem } from '../../descriptions/service-info.js'
import type { JsonSchema, ToolDefinition } from '../../tools/types.js'

/**
 * The bazaar discovery extension (x402 `extensions.bazaar`) of a paid HTTP tool route: how to call
 * it (`POST`, `bodyType: "json"`, the example body and the body's JSON Schema) and what it answers
 * (the `{ok: true, result}` example and its schema).
 *
 * Built with the SDK's `declareDiscoveryExtension`, then given its method with the SDK's own
 * `bazaarResourceServerExtension.enrichDeclaration` (which the SDK's middleware would call per
 * request; our gate does not, so we call it once here). The result is a pure function of the
 * catalogue entry: the client echoes it in its PaymentPayload and the gate refuses an altered echo.
 *
 * The body schema sits inside the bazaar `schema`, so its `$defs` are hoisted to that schema's
 * root, where `#/$defs/…` references resolve.
 *
 * @example
 * httpBazaarExtension(hashTool)
 * // { bazaar: { info: { input: { type: 'http', method: 'POST', bodyType: 'json',
 * //   body: { input: 'hello world', … } }, output: { type: 'json', example: { ok: true, … } } },
 * //   schema: { $schema: '…/2020-12/schema', … } } }
 * @throws {Error} when the tool's example is invalid (see {@link toolExample})
 */
export function httpBazaarExtension(tool: ToolDefinition): Record<string, unknown> {
  const example = toolExample(tool)
  const stem = componentStem(tool)
  const input = hoistDefs(toolInputSchema(tool), `${stem}Input`, '#/$defs/')
  const result = hoistDefs(toolResultSchema(tool), `${stem}Result`, '#/$defs/')
  const envelope: JsonSchema = {
    properties: { ok: { const: true }, result: result.root },
    required: ['ok', 'result'],
  }
  const declared = declareDiscoveryExtension({
    bodyType: 'json',
    input: example.body,
    inputSchema: input.root,
    output: { example: example.response, schema: envelope },
  }).bazaar
  const enrich = bazaarResourceServerExtension.enrichDeclaration
  if (!declared || !enrich) throw new Error('@x402/extensions did not build a bazaar extension')
  const bazaar = enrich(declared, {
    method: 'POST',
    adapter: { getPath: () => tool.path },
  }) as { schema: JsonSchema }
  const defs: Record<string, JsonSchema> = {
    ...input.defs,
    ...result.defs,
    ...(input.selfReferenced ? { [`${stem}Input`]: input.root } : {}),
    ...(result.selfReferenced ? { [`${stem}Result`]: result.root } : {}),
  }
  if (Object.keys(defs).length > 0) bazaar.schema = { ...bazaar.schema, $defs: defs }
  return { bazaar }
}
