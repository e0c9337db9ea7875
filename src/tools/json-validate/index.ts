import { type OutputUnit, type Schema, validate } from '@cfworker/json-schema'
import { z } from 'zod'
import { jsonObject } from '../fields.js'
import { inspectJson } from '../json-value.js'
import { KiB, MAX_JSON_DEPTH } from '../limits.js'
import { type ToolDefinition, ToolError } from '../types.js'
import { utf8Length } from '../unicode.js'
import { describeErrors } from './messages.js'
import { resolveRefs } from './refs.js'
import { MAX_SCHEMA_NESTING, type SchemaObject, scanSchema } from './scan.js'

export { SUPPORTED_KEYWORDS } from './keywords.js'

/** Largest schema: 64 KiB of UTF-8 when serialized as JSON. */
export const MAX_SCHEMA_BYTES = 64 * KiB

/** At most this many errors are returned; `error_count` still counts them all. */
export const MAX_ERRORS = 100

/**
 * Longest array `value` may hold when the schema uses `uniqueItems`: the evaluator compares every
 * pair of items, so the cost grows with the square of the length.
 */
export const MAX_UNIQUE_ITEMS = 10_000

/** Request body of POST /json-validate (SPEC 2.2). */
export const jsonValidateInput = z
  .object({
    value: z.unknown().describe('The JSON value to validate.'),
    schema: jsonObject(
      'JSON Schema draft 2020-12 as an object, using only the supported keywords and local "#..." references.',
    ),
  })
  .strict()

/** Parsed json-validate request. */
export type JsonValidateInput = z.output<typeof jsonValidateInput>

const validationError = z.object({
  instanceLocation: z.string().describe('JSON Pointer (RFC 6901) into value; "" is the root.'),
  keyword: z.string().describe('The keyword that failed.'),
  keywordLocation: z
    .string()
    .describe('JSON Pointer of the failing keyword along the evaluation path (through $ref).'),
  error: z
    .string()
    .describe(
      'Human-readable message: the keyword, the rule it states and what the value is, e.g. "exclusiveMinimum: 0 must be greater than 0.".',
    ),
})

/** `result` of a json-validate call. */
export const jsonValidateOutput = z.object({
  valid: z.boolean().describe('Whether value conforms to schema.'),
  error_count: z.number().int().min(0).describe('Total number of errors found.'),
  truncated: z.boolean().describe(`Whether errors was cut to the first ${MAX_ERRORS}.`),
  errors: z.array(validationError).max(MAX_ERRORS).describe('Errors in evaluation order.'),
})

/** Result of {@link jsonValidate}. */
export type JsonValidateResult = z.output<typeof jsonValidateOutput>

/**
 * The evaluator reports locations as URI fragments ("#/a%20b"); RFC 6901 section 6 maps those
 * back to plain JSON Pointers ("/a b").
 */
function toPointer(fragment: string): string {
  const raw = fragment.startsWith('#') ? fragment.slice(1) : fragment
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

/** An evaluator unit with JSON Pointer locations; the message is rewritten by describeErrors. */
function toError(unit: OutputUnit): JsonValidateResult['errors'][number] {
  return {
    instanceLocation: toPointer(unit.instanceLocation),
    keyword: unit.keyword,
    // @cfworker/json-schema 4.1 misspells this location segment ("dependantRequired").
    keywordLocation: toPointer(unit.keywordLocation).replace(
      /\/dependantRequired$/,
      '/dependentRequired',
    ),
    error: unit.error,
  }
}

/**
 * Validates `value` against a JSON Schema draft 2020-12 `schema` with @cfworker/json-schema
 * (an interpreter: no code generation from untrusted schemas, unlike ajv), reporting every error
 * (no short circuit). The schema is checked first: supported keywords only, local `$ref` only,
 * bounded size and depth, no reference cycle. `format` is an annotation (the 2020-12 default).
 *
 * @example jsonValidate({ value: { a: 1 }, schema: { type: 'object', required: ['b'] } })
 * // { valid: false, error_count: 1, truncated: false, errors: [{ instanceLocation: '', keyword: 'required', ... }] }
 * @throws {ToolError} `schema_too_large`, `schema_too_deep`, `value_too_deep`, `value_too_large`,
 *   `invalid_unicode`, `unsupported_keyword`, `unsupported_ref`, `unsupported_dialect`,
 *   `invalid_schema`, `unresolved_ref`, `ref_cycle`, `validation_too_complex`,
 *   `number_out_of_range`
 */
export function jsonValidate(input: JsonValidateInput): JsonValidateResult {
  const { scanned, lookup } = prepare(input)
  const units = evaluate(input.value, scanned.schema, lookup)
  return {
    valid: units.length === 0,
    error_count: units.length,
    truncated: units.length > MAX_ERRORS,
    errors: describeErrors(
      units.map(toError),
      { value: input.value, schema: scanned.schema, lookup },
      MAX_ERRORS,
    ),
  }
}

/**
 * The shape check of json-validate (see `ToolDefinition.check`): everything
 * {@link jsonValidate} refuses before it evaluates (sizes, depths, Unicode, numbers, the schema's
 * keywords and references).
 *
 * @throws {ToolError} as {@link jsonValidate}, but `validation_too_complex`
 */
export function checkJsonValidate(input: JsonValidateInput): void {
  prepare(input)
}

/** The checks of the schema and the value, in the order the errors are documented. */
function prepare(input: JsonValidateInput): {
  scanned: ReturnType<typeof scanSchema>
  lookup: ReturnType<typeof resolveRefs>
} {
  inspectJson(input.schema, {
    field: '/schema',
    maxDepth: MAX_JSON_DEPTH,
    tooDeep: 'schema_too_deep',
  })
  const schemaBytes = utf8Length(JSON.stringify(input.schema))
  if (schemaBytes > MAX_SCHEMA_BYTES) {
    throw new ToolError(
      'schema_too_large',
      `schema is ${schemaBytes} bytes as JSON; the limit is ${MAX_SCHEMA_BYTES}`,
      { limit: MAX_SCHEMA_BYTES, size: schemaBytes },
    )
  }
  const scanned = scanSchema(input.schema)
  const stats = inspectJson(input.value, {
    field: '/value',
    maxDepth: MAX_JSON_DEPTH,
    tooDeep: 'value_too_deep',
  })
  if (scanned.usesUniqueItems && stats.longestArray > MAX_UNIQUE_ITEMS) {
    throw new ToolError(
      'value_too_large',
      `value holds an array of ${stats.longestArray} items; with uniqueItems in the schema the limit is ${MAX_UNIQUE_ITEMS}`,
      { limit: MAX_UNIQUE_ITEMS, size: stats.longestArray },
    )
  }
  return { scanned, lookup: resolveRefs(scanned.schema, scanned.nodes) }
}

function evaluate(
  value: unknown,
  schema: SchemaObject,
  lookup: ReturnType<typeof resolveRefs>,
): OutputUnit[] {
  try {
    return validate(value, schema as Schema, '2020-12', lookup, false).errors
  } catch (error) {
    // The evaluator recurses per subschema and spreads error lists into push(); a huge error list
    // or a pathological schema can exhaust the stack. That is a property of the input, not a bug.
    if (error instanceof RangeError) {
      throw new ToolError(
        'validation_too_complex',
        'validation exceeded the evaluator stack (too many errors or too deep a recursion); simplify the schema or split the value',
      )
    }
    throw error
  }
}

/** Catalogue entry (SPEC 4.1: POST /json-validate, payload_json_validate, 0.001 USDC). */
export const jsonValidateTool: ToolDefinition<JsonValidateInput, JsonValidateResult> = {
  id: 'json-validate',
  path: '/json-validate',
  mcpName: 'payload_json_validate',
  operationId: 'json_validate',
  price: '1000',
  title: 'JSON Schema validate',
  description:
    'Validate a JSON value against a JSON Schema (draft 2020-12, local $ref only) and list every error with JSON Pointers; unsupported keywords are reported, never ignored.',
  input: jsonValidateInput,
  output: jsonValidateOutput,
  examples: [
    {
      value: { name: 'Ada', age: '36' },
      schema: {
        type: 'object',
        required: ['name', 'age', 'email'],
        properties: {
          name: { type: 'string' },
          age: { type: 'integer', minimum: 0 },
          email: { type: 'string' },
        },
      },
    },
    {
      value: [1, 2, 3],
      schema: { type: 'array', items: { type: 'integer' }, uniqueItems: true },
    },
  ],
  limits: [
    `schema: at most ${MAX_SCHEMA_BYTES / KiB} KiB as JSON, ${MAX_JSON_DEPTH} levels of JSON nesting, ${MAX_SCHEMA_NESTING} levels of nested subschemas`,
    'schema: draft 2020-12 supported keywords only; $ref must start with "#"',
    `value: at most ${MAX_JSON_DEPTH} levels of nesting; arrays of at most ${MAX_UNIQUE_ITEMS} items when the schema uses uniqueItems`,
    'all strings and keys must be well-formed Unicode (no lone surrogates)',
    `errors: at most ${MAX_ERRORS} returned (error_count has the total)`,
  ],
  check: checkJsonValidate,
  run: (input) => jsonValidate(input),
}
