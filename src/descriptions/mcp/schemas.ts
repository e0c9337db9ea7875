import type { JsonSchema, ToolDefinition } from '../../tools/types.js'
import { hoistDefs, JSON_SCHEMA_DIALECT, toolResultSchema } from '../json-schema.js'

/** `{ok: true, result}`: the success envelope of SPEC 2.1, also the paid `structuredContent`. */
function successEnvelope(result: JsonSchema): JsonSchema {
  return {
    title: 'Success',
    type: 'object',
    properties: { ok: { const: true }, result },
    required: ['ok', 'result'],
    additionalProperties: false,
  }
}

/** `{ok: false, error, code, …}`: the failure envelope of SPEC 2.1 and 7. */
const failureEnvelope: JsonSchema = {
  title: 'Failure',
  description: 'isError result: the failure envelope (invalid arguments, tool error, 503 cases).',
  type: 'object',
  properties: {
    ok: { const: false },
    error: { type: 'string' },
    code: { type: 'string' },
  },
  required: ['ok', 'error', 'code'],
}

/** The x402 v2 PaymentRequired, loosely: the client reads it with the x402 SDK's own schema. */
const paymentRequired: JsonSchema = {
  title: 'PaymentRequired',
  description: 'isError result: x402 v2 PaymentRequired; pay one of `accepts` and call again.',
  type: 'object',
  properties: {
    x402Version: { const: 2 },
    error: { type: 'string' },
    resource: { type: 'object' },
    accepts: { type: 'array', items: { type: 'object' } },
    extensions: { type: 'object' },
  },
  required: ['x402Version', 'accepts'],
}

/**
 * JSON Schema (draft 2020-12) of a tool's `structuredContent`: the success envelope
 * `{ok: true, result}` with `result` generated from the tool's Zod output schema, or, on an
 * `isError` result, a PaymentRequired or the failure envelope.
 *
 * The error shapes are part of the schema because the official MCP TypeScript client (1.x up to
 * at least 1.32) validates `structuredContent` against `outputSchema` even when `isError` is true
 * (modelcontextprotocol/typescript-sdk#1943): with only the success shape, such a client could
 * never read the PaymentRequired.
 *
 * The result schema's `$defs` are hoisted to the root, where its `#/$defs/…` references point.
 *
 * @example
 * toolOutputSchema(hashTool).anyOf[0].properties.result // the hash result schema
 */
export function toolOutputSchema(tool: ToolDefinition): JsonSchema {
  const name = 'Result'
  const result = hoistDefs(toolResultSchema(tool), name, '#/$defs/')
  const defs = { ...result.defs, ...(result.selfReferenced ? { [name]: result.root } : {}) }
  return {
    $schema: JSON_SCHEMA_DIALECT,
    type: 'object',
    anyOf: [successEnvelope(result.root), paymentRequired, failureEnvelope],
    ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}),
  }
}
