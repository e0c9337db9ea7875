import { z } from 'zod'
import type { JsonSchema, ToolDefinition } from '../tools/types.js'

/** The JSON Schema dialect of every schema we publish. */
export const JSON_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema'

/**
 * JSON Schema (draft 2020-12) of a tool's request body and MCP `arguments`, as a client must send
 * it (`io: 'input'`: fields with defaults are optional): OpenAPI, the bazaar and MCP publish this
 * one schema.
 *
 * @example
 * toolInputSchema(hashTool)
 * // { $schema: '…/2020-12/schema', type: 'object', properties: { input: {…}, algorithm: {…} }, … }
 * @throws {Error} when it is not an object schema (a body is a JSON object; MCP requires one)
 */
export function toolInputSchema(tool: ToolDefinition): JsonSchema {
  const schema = z.toJSONSchema(tool.input, { target: 'draft-2020-12', io: 'input' }) as JsonSchema
  if (schema.type !== 'object') {
    throw new Error(`MCP tool ${tool.mcpName}: the input schema must be a JSON object schema`)
  }
  return schema
}

/** JSON Schema (draft 2020-12) of a tool's `result`. */
export function toolResultSchema(tool: ToolDefinition): JsonSchema {
  return z.toJSONSchema(tool.output, { target: 'draft-2020-12' }) as JsonSchema
}

/** A schema split into its root and its hoisted definitions. */
export interface HoistedSchema {
  /** The schema without `$schema` and `$defs`, its references rewritten. */
  root: JsonSchema
  /** The definitions, renamed `<prefix>_<name>`, their references rewritten. */
  defs: Record<string, JsonSchema>
  /** Whether the root refers to itself (`$ref: "#"`), now as `<refBase><rootName>`. */
  selfReferenced: boolean
}

/** Keywords whose values are data, not schemas: a `$ref` inside them is not a reference. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples', 'example'])
/** Keywords whose values map names to schemas. */
const NAME_MAP_KEYWORDS = new Set(['properties', 'patternProperties', '$defs', 'dependentSchemas'])

/**
 * Moves the `$defs` of a generated schema out of it, so that the schema can be embedded in a
 * larger document (an OpenAPI component, the bazaar `schema`) where its local references
 * `#/$defs/…` would otherwise point at the wrong root. Definitions are renamed
 * `<rootName>_<name>` (leading underscores dropped, other characters than `A-Za-z0-9._-` replaced
 * by `_`) to stay unique beside other tools' ones.
 *
 * @param schema - a schema from `z.toJSONSchema`
 * @param rootName - the name the root itself gets beside its definitions, e.g. "HashInput"
 * @param refBase - the JSON Pointer prefix of the new home, e.g. "#/components/schemas/"
 * @example
 * hoistDefs({ type: 'array', items: { $ref: '#/$defs/__schema0' }, $defs: { __schema0: {…} } },
 *   'PipelineInput', '#/$defs/')
 * // { root: { type: 'array', items: { $ref: '#/$defs/PipelineInput_schema0' } },
 * //   defs: { PipelineInput_schema0: {…} }, selfReferenced: false }
 */
export function hoistDefs(schema: JsonSchema, rootName: string, refBase: string): HoistedSchema {
  const { $schema: _dialect, $defs, ...root } = schema
  // Component names must match ^[a-zA-Z0-9._-]+$ (OpenAPI 3.1, 4.8.7.1), which also keeps them
  // free of characters that JSON Pointer would escape.
  const rename = (name: string) =>
    `${rootName}_${name.replace(/^_+/, '').replace(/[^A-Za-z0-9._-]/g, '_')}`
  let selfReferenced = false

  // `inNameMap`: the keys of this object are property names (under `properties` etc.), so a key
  // that looks like a data keyword ("default", "const") still holds a schema.
  const rewrite = (value: unknown, inNameMap = false): unknown => {
    if (Array.isArray(value)) return value.map((item) => rewrite(item))
    if (value === null || typeof value !== 'object') return value
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value)) {
      if (!inNameMap && DATA_KEYWORDS.has(k)) {
        out[k] = v
      } else if (!inNameMap && k === '$ref' && typeof v === 'string') {
        if (v === '#') {
          selfReferenced = true
          out[k] = `${refBase}${rootName}`
        } else if (v.startsWith('#/$defs/')) {
          out[k] = `${refBase}${rename(decodePointerToken(v.slice('#/$defs/'.length)))}`
        } else {
          out[k] = v
        }
      } else {
        out[k] = rewrite(v, !inNameMap && NAME_MAP_KEYWORDS.has(k))
      }
    }
    return out
  }

  const defs: Record<string, JsonSchema> = {}
  if ($defs && typeof $defs === 'object') {
    for (const [name, def] of Object.entries($defs as Record<string, unknown>)) {
      defs[rename(name)] = rewrite(def) as JsonSchema
    }
  }
  return { root: rewrite(root) as JsonSchema, defs, selfReferenced }
}

/** RFC 6901 reference token -> name. */
function decodePointerToken(token: string): string {
  return decodeURIComponent(token).replaceAll('~1', '/').replaceAll('~0', '~')
}
