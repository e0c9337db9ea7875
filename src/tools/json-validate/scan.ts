import { ToolError } from '../types.js'
import {
  DRAFT_2020_12,
  type KeywordShape,
  refusedKeywordReasons,
  supportedKeywords,
} from './keywords.js'

/** Deepest nesting of subschemas below the root schema. */
export const MAX_SCHEMA_NESTING = 32

/** A JSON object inside a schema. */
export type SchemaObject = Record<string, unknown>

const falseSchemas = new WeakSet<object>()

/**
 * The evaluator's stand-in for a `false` subschema: `{"not": {}}`, which rejects every value
 * just as `false` does. @cfworker/json-schema reports a failing `false` with the instance
 * location as its keywordLocation; through this object the failure gets a real evaluation path
 * (`…/not`), which json-validate reports as the keyword `false` at the subschema's location.
 */
function falseSchema(): SchemaObject {
  const schema = { not: {} }
  falseSchemas.add(schema)
  return schema
}

/** Whether `node` is the evaluator's stand-in for a `false` subschema (see {@link scanSchema}). */
export function isFalseSchema(node: unknown): boolean {
  return typeof node === 'object' && node !== null && falseSchemas.has(node)
}

/** One object subschema of a scanned copy, with its JSON Pointer (RFC 6901) in the original. */
export interface SchemaNode {
  node: SchemaObject
  location: string
}

/** Result of {@link scanSchema}. */
export interface ScannedSchema {
  /**
   * A copy of the schema for the evaluator: `format` is left out because draft 2020-12 makes it an
   * annotation by default while @cfworker/json-schema would assert it, and each `false`
   * subschema is an equivalent `{"not": {}}` ({@link isFalseSchema}). Data values (`const`,
   * `enum`...) are shared with the input, not copied.
   */
  schema: SchemaObject
  /** Every object subschema of the copy, root first. */
  nodes: SchemaNode[]
  /** Whether any subschema sets `uniqueItems: true` (quadratic in the array length). */
  usesUniqueItems: boolean
}

const TYPES = new Set(['array', 'boolean', 'integer', 'null', 'number', 'object', 'string'])
const ANCHOR = /^[A-Za-z_][-A-Za-z0-9._]*$/

/** Defines an own property even for the key "__proto__", which plain assignment would not. */
function setOwn(target: SchemaObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, {
    value,
    enumerable: true,
    writable: true,
    configurable: true,
  })
}

function isObject(value: unknown): value is SchemaObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function escapeToken(token: string): string {
  return token.replace(/~/g, '~0').replace(/\//g, '~1')
}

function where(location: string): string {
  return location === '' ? 'the schema root' : location
}

function isUniqueStringArray(value: unknown): value is string[] {
  return (
    Array.isArray(value) &&
    value.every((item) => typeof item === 'string') &&
    new Set(value).size === value.length
  )
}

function regexProblem(source: string): string | undefined {
  try {
    new RegExp(source, 'u')
    return undefined
  } catch (error) {
    return error instanceof Error ? error.message : 'invalid regular expression'
  }
}

/**
 * Walks a JSON Schema (draft 2020-12) structurally, following {@link supportedKeywords}: keys
 * under `properties`, `patternProperties`, `$defs` and `dependentSchemas` are names, and the
 * values of `const`, `enum`, `default` and `examples` are data, so neither is mistaken for a
 * keyword. Checks each keyword's value shape, so the evaluator never sees a malformed schema.
 * Recursive, so the caller must bound the JSON nesting depth first.
 *
 * @example scanSchema({ type: 'object', properties: { format: { type: 'string' } } })
 * // ok: "format" here is a property name
 * @throws {ToolError} `unsupported_keyword` `{ keyword, schemaLocation }`; `unsupported_ref`
 *   `{ ref, schemaLocation }` for a `$ref` not starting with "#"; `unsupported_dialect`
 *   `{ dialect, schemaLocation }`; `invalid_schema` `{ keyword, schemaLocation }`;
 *   `schema_too_deep` `{ limit, schemaLocation }`. schemaLocation is a JSON Pointer.
 */
export function scanSchema(schema: SchemaObject): ScannedSchema {
  const nodes: SchemaNode[] = []
  let usesUniqueItems = false

  function walk(value: unknown, location: string, nesting: number): unknown {
    if (typeof value === 'boolean') return value || falseSchema()
    if (!isObject(value)) {
      throw new ToolError(
        'invalid_schema',
        `the subschema at ${where(location)} must be an object or a boolean`,
        { schemaLocation: location },
      )
    }
    if (nesting > MAX_SCHEMA_NESTING) {
      throw new ToolError(
        'schema_too_deep',
        `subschemas are nested more than ${MAX_SCHEMA_NESTING} levels deep at ${where(location)}`,
        { limit: MAX_SCHEMA_NESTING, schemaLocation: location },
      )
    }
    const copy: SchemaObject = {}
    nodes.push({ node: copy, location })
    for (const [keyword, keywordValue] of Object.entries(value)) {
      const keywordLocation = `${location}/${escapeToken(keyword)}`
      const info = Object.hasOwn(supportedKeywords, keyword)
        ? supportedKeywords[keyword as keyof typeof supportedKeywords]
        : undefined
      if (!info) {
        const reason = refusedKeywordReasons[keyword]
        throw new ToolError(
          'unsupported_keyword',
          `unsupported keyword "${keyword}" at ${where(location)}${reason ? `: ${reason}` : ''}`,
          { keyword, schemaLocation: keywordLocation },
        )
      }
      const checked = readKeyword(keyword, info.shape, keywordValue, keywordLocation, nesting)
      if (keyword === 'uniqueItems' && keywordValue === true) usesUniqueItems = true
      if (keyword !== 'format') setOwn(copy, keyword, checked)
    }
    return copy
  }

  function readKeyword(
    keyword: string,
    shape: KeywordShape,
    value: unknown,
    location: string,
    nesting: number,
  ): unknown {
    const invalid = (expected: string): never => {
      throw new ToolError('invalid_schema', `"${keyword}" at ${location} must be ${expected}`, {
        keyword,
        schemaLocation: location,
      })
    }
    switch (shape) {
      case 'schema':
        return walk(value, location, nesting + 1)
      case 'schemaArray':
        if (!Array.isArray(value) || value.length === 0) invalid('a non-empty array of schemas')
        return (value as unknown[]).map((item, i) => walk(item, `${location}/${i}`, nesting + 1))
      case 'schemaMap':
      case 'patternSchemaMap': {
        if (!isObject(value)) return invalid('an object of schemas')
        const copy: SchemaObject = {}
        for (const [name, sub] of Object.entries(value)) {
          const problem = shape === 'patternSchemaMap' ? regexProblem(name) : undefined
          if (problem)
            invalid(`keyed by valid regular expressions (${JSON.stringify(name)}: ${problem})`)
          setOwn(copy, name, walk(sub, `${location}/${escapeToken(name)}`, nesting + 1))
        }
        return copy
      }
      case 'any':
        return value
      case 'array':
        return Array.isArray(value) ? value : invalid('an array')
      case 'string':
        return typeof value === 'string' ? value : invalid('a string')
      case 'boolean':
        return typeof value === 'boolean' ? value : invalid('a boolean')
      case 'number':
        return typeof value === 'number' && Number.isFinite(value) ? value : invalid('a number')
      case 'positiveNumber':
        return typeof value === 'number' && Number.isFinite(value) && value > 0
          ? value
          : invalid('a number greater than 0')
      case 'count':
        return Number.isSafeInteger(value) && (value as number) >= 0
          ? value
          : invalid('a non-negative integer')
      case 'stringSet':
        return isUniqueStringArray(value) ? value : invalid('an array of unique strings')
      case 'type':
        if (typeof value === 'string' && TYPES.has(value)) return value
        if (isUniqueStringArray(value) && value.length > 0 && value.every((t) => TYPES.has(t))) {
          return value
        }
        return invalid(
          `a type name or a non-empty array of unique type names (${[...TYPES].join(', ')})`,
        )
      case 'ref':
        if (typeof value !== 'string') return invalid('a string')
        if (!value.startsWith('#')) {
          throw new ToolError(
            'unsupported_ref',
            `only local references starting with "#" are supported; "$ref" at ${location} is ${JSON.stringify(value)}`,
            { ref: value, schemaLocation: location },
          )
        }
        return value
      case 'id':
        if (nesting > 0) {
          // @cfworker/json-schema 4.1 registers an embedded resource's $anchor under the
          // enclosing base URI too, so "#name" can resolve to the wrong subschema.
          throw new ToolError(
            'unsupported_keyword',
            `"$id" at ${location} is only supported at the schema root: embedded schema resources are not supported`,
            { keyword, schemaLocation: location },
          )
        }
        if (typeof value !== 'string') return invalid('a string')
        if (/#./.test(value)) return invalid('a URI without a fragment (use $anchor)')
        return value
      case 'anchor':
        return typeof value === 'string' && ANCHOR.test(value)
          ? value
          : invalid('a plain name matching ^[A-Za-z_][-A-Za-z0-9._]*$')
      case 'dialect':
        if (value === DRAFT_2020_12 || value === `${DRAFT_2020_12}#`) return value
        throw new ToolError(
          'unsupported_dialect',
          `only JSON Schema draft 2020-12 is supported; "$schema" at ${location} is ${JSON.stringify(value)}`,
          { dialect: value, schemaLocation: location },
        )
      case 'regex': {
        if (typeof value !== 'string') return invalid('a string')
        const problem = regexProblem(value)
        return problem ? invalid(`a valid regular expression (${problem})`) : value
      }
      case 'dependentRequired':
        if (!isObject(value) || !Object.values(value).every(isUniqueStringArray)) {
          return invalid('an object whose values are arrays of unique strings')
        }
        return value
    }
  }

  const copy = walk(schema, '', 0) as SchemaObject
  return { schema: copy, nodes, usesUniqueItems }
}
