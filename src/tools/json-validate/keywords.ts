/**
 * How a keyword's value is read when walking a schema: a subschema, a list or map of them, or
 * plain data of a given shape. The walk follows this table, so property names are never mistaken
 * for keywords and `enum`/`const`/`default`/`examples` values are never scanned as schemas.
 */
export type KeywordShape =
  | 'schema'
  | 'schemaArray'
  | 'schemaMap'
  | 'patternSchemaMap'
  | 'any'
  | 'array'
  | 'string'
  | 'boolean'
  | 'number'
  | 'positiveNumber'
  | 'count'
  | 'stringSet'
  | 'type'
  | 'ref'
  | 'id'
  | 'anchor'
  | 'dialect'
  | 'regex'
  | 'dependentRequired'

/** A JSON Schema 2020-12 vocabulary (JSON Schema Core and Validation, 2020-12). */
export type Vocabulary =
  | 'core'
  | 'applicator'
  | 'unevaluated'
  | 'validation'
  | 'meta-data'
  | 'format-annotation'
  | 'content'

/** What we know about one supported keyword. */
export interface KeywordInfo {
  vocabulary: Vocabulary
  shape: KeywordShape
  /** Collected but never asserted (2020-12 default for meta-data, format and content). */
  annotation?: true
}

/**
 * Every JSON Schema draft 2020-12 keyword json-validate accepts. Anything else is rejected with
 * `unsupported_keyword` instead of being silently ignored, because an ignored keyword makes a
 * schema accept what its author meant to reject.
 */
export const supportedKeywords = {
  $schema: { vocabulary: 'core', shape: 'dialect' },
  $id: { vocabulary: 'core', shape: 'id' },
  $anchor: { vocabulary: 'core', shape: 'anchor' },
  $ref: { vocabulary: 'core', shape: 'ref' },
  $defs: { vocabulary: 'core', shape: 'schemaMap' },
  $comment: { vocabulary: 'core', shape: 'string' },
  allOf: { vocabulary: 'applicator', shape: 'schemaArray' },
  anyOf: { vocabulary: 'applicator', shape: 'schemaArray' },
  oneOf: { vocabulary: 'applicator', shape: 'schemaArray' },
  not: { vocabulary: 'applicator', shape: 'schema' },
  if: { vocabulary: 'applicator', shape: 'schema' },
  // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword name; this table is never awaited
  then: { vocabulary: 'applicator', shape: 'schema' },
  else: { vocabulary: 'applicator', shape: 'schema' },
  dependentSchemas: { vocabulary: 'applicator', shape: 'schemaMap' },
  prefixItems: { vocabulary: 'applicator', shape: 'schemaArray' },
  items: { vocabulary: 'applicator', shape: 'schema' },
  contains: { vocabulary: 'applicator', shape: 'schema' },
  properties: { vocabulary: 'applicator', shape: 'schemaMap' },
  patternProperties: { vocabulary: 'applicator', shape: 'patternSchemaMap' },
  additionalProperties: { vocabulary: 'applicator', shape: 'schema' },
  propertyNames: { vocabulary: 'applicator', shape: 'schema' },
  unevaluatedItems: { vocabulary: 'unevaluated', shape: 'schema' },
  unevaluatedProperties: { vocabulary: 'unevaluated', shape: 'schema' },
  type: { vocabulary: 'validation', shape: 'type' },
  const: { vocabulary: 'validation', shape: 'any' },
  enum: { vocabulary: 'validation', shape: 'array' },
  multipleOf: { vocabulary: 'validation', shape: 'positiveNumber' },
  maximum: { vocabulary: 'validation', shape: 'number' },
  exclusiveMaximum: { vocabulary: 'validation', shape: 'number' },
  minimum: { vocabulary: 'validation', shape: 'number' },
  exclusiveMinimum: { vocabulary: 'validation', shape: 'number' },
  maxLength: { vocabulary: 'validation', shape: 'count' },
  minLength: { vocabulary: 'validation', shape: 'count' },
  pattern: { vocabulary: 'validation', shape: 'regex' },
  maxItems: { vocabulary: 'validation', shape: 'count' },
  minItems: { vocabulary: 'validation', shape: 'count' },
  uniqueItems: { vocabulary: 'validation', shape: 'boolean' },
  maxContains: { vocabulary: 'validation', shape: 'count' },
  minContains: { vocabulary: 'validation', shape: 'count' },
  maxProperties: { vocabulary: 'validation', shape: 'count' },
  minProperties: { vocabulary: 'validation', shape: 'count' },
  required: { vocabulary: 'validation', shape: 'stringSet' },
  dependentRequired: { vocabulary: 'validation', shape: 'dependentRequired' },
  title: { vocabulary: 'meta-data', shape: 'string', annotation: true },
  description: { vocabulary: 'meta-data', shape: 'string', annotation: true },
  default: { vocabulary: 'meta-data', shape: 'any', annotation: true },
  deprecated: { vocabulary: 'meta-data', shape: 'boolean', annotation: true },
  readOnly: { vocabulary: 'meta-data', shape: 'boolean', annotation: true },
  writeOnly: { vocabulary: 'meta-data', shape: 'boolean', annotation: true },
  examples: { vocabulary: 'meta-data', shape: 'array', annotation: true },
  format: { vocabulary: 'format-annotation', shape: 'string', annotation: true },
  contentEncoding: { vocabulary: 'content', shape: 'string', annotation: true },
  contentMediaType: { vocabulary: 'content', shape: 'string', annotation: true },
  contentSchema: { vocabulary: 'content', shape: 'schema', annotation: true },
} as const satisfies Record<string, KeywordInfo>

/** A supported keyword name. */
export type SupportedKeyword = keyof typeof supportedKeywords

/** Names of all supported keywords, in vocabulary order (documented in docs/tools.md). */
export const SUPPORTED_KEYWORDS = Object.keys(supportedKeywords) as readonly SupportedKeyword[]

/**
 * Why some well-known keywords are refused, for a more helpful `unsupported_keyword` message.
 */
export const refusedKeywordReasons: Readonly<Record<string, string>> = {
  $dynamicRef: 'dynamic references are not supported',
  $dynamicAnchor: 'dynamic anchors are not supported',
  $vocabulary: 'custom vocabularies (meta-schemas) are not supported',
  $recursiveRef: 'draft 2019-09 keyword; draft 2020-12 replaced it with $dynamicRef',
  $recursiveAnchor: 'draft 2019-09 keyword; draft 2020-12 replaced it with $dynamicAnchor',
  definitions: 'pre-2019 keyword; use $defs',
  dependencies: 'pre-2019 keyword; use dependentRequired or dependentSchemas',
  additionalItems: 'pre-2020 keyword; use items with prefixItems',
  id: 'draft-04 keyword; use $id',
}

/** The only dialect accepted in `$schema`. */
export const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema'
