import fc from 'fast-check'
import { z } from 'zod'
import type { JsonSchema, ToolDefinition } from '../../../src/tools/types.js'

/** Longest string the schema-derived generator writes (limits are probed by sizedString). */
const MAX_GENERATED_LENGTH = 64

/** A small well-formed JSON value (no lone surrogates), for fields of any type. */
export const smallJson: fc.Arbitrary<unknown> = fc.jsonValue({ maxDepth: 3 })

/**
 * Values valid against the subset of JSON Schema that `z.toJSONSchema` writes for our tool
 * inputs: `type` object (properties, required, additionalProperties false), string (minLength,
 * maxLength, pattern, enum), array (items, minItems, maxItems), number, integer, boolean, null;
 * a schema without `type` (Zod's `unknown`) takes any small JSON value. Strings are capped at 64
 * characters; limits are probed elsewhere.
 *
 * @example fc.sample(arbitraryFromSchema({ type: 'string', enum: ['a', 'b'] }), 1) // ['a']
 */
export function arbitraryFromSchema(schema: JsonSchema): fc.Arbitrary<unknown> {
  if (Array.isArray(schema.enum)) return fc.constantFrom(...(schema.enum as unknown[]))
  if ('const' in schema) return fc.constant(schema.const)
  switch (schema.type) {
    case 'object': {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
      const model: Record<string, fc.Arbitrary<unknown>> = {}
      for (const [key, sub] of Object.entries(properties)) model[key] = arbitraryFromSchema(sub)
      const requiredKeys = (schema.required ?? []) as string[]
      return fc.record(model, { requiredKeys })
    }
    case 'array': {
      const items = (schema.items ?? {}) as JsonSchema
      const minLength = (schema.minItems as number | undefined) ?? 0
      const maxLength = Math.min((schema.maxItems as number | undefined) ?? 8, minLength + 8)
      return fc.array(arbitraryFromSchema(items), { minLength, maxLength })
    }
    case 'string': {
      if (typeof schema.pattern === 'string') {
        return fc
          .stringMatching(new RegExp(schema.pattern))
          .filter((s) => s.length <= ((schema.maxLength as number | undefined) ?? Infinity))
      }
      const minLength = (schema.minLength as number | undefined) ?? 0
      const maxLength = Math.min(
        (schema.maxLength as number | undefined) ?? MAX_GENERATED_LENGTH,
        Math.max(minLength, MAX_GENERATED_LENGTH),
      )
      return fc.string({ unit: 'grapheme', minLength, maxLength })
    }
    case 'integer':
      return fc.integer()
    case 'number':
      return fc.double({ noNaN: true, noDefaultInfinity: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    default:
      return smallJson
  }
}

/** JSON Schema of a tool's request body as a client sends it (defaults make fields optional). */
export function inputSchemaOf(tool: ToolDefinition): JsonSchema {
  return z.toJSONSchema(tool.input, { target: 'draft-2020-12', io: 'input' }) as JsonSchema
}

/** The request fields of a tool with their JSON Schemas, from {@link inputSchemaOf}. */
export function inputFields(tool: ToolDefinition): Array<[string, JsonSchema]> {
  return Object.entries((inputSchemaOf(tool).properties ?? {}) as Record<string, JsonSchema>)
}
