import { supportedKeywords } from './keywords.js'
import type { SchemaLookup } from './refs.js'
import { isFalseSchema, type SchemaObject } from './scan.js'

/** One error of json-validate's result; locations are JSON Pointers (RFC 6901). */
export interface ValidationError {
  instanceLocation: string
  keyword: string
  keywordLocation: string
  error: string
}

/** What the messages are written from: the value, the evaluated schema copy and its `$ref`s. */
export interface MessageContext {
  value: unknown
  /** The schema copy the evaluator ran on (`scanSchema(...).schema`). */
  schema: SchemaObject
  lookup: SchemaLookup
}

/** Longest rendering of a value inside a message, in characters, before it is cut with "…". */
const MAX_SHOWN = 60

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v)

/** JSON of a value, cut to {@link MAX_SHOWN} characters. */
function show(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value)
  return json.length > MAX_SHOWN ? `${json.slice(0, MAX_SHOWN - 1)}…` : json
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`
const quote = (name: string) => JSON.stringify(name)

/** "0", "0 and 2", "0, 1 and 3". */
function list(items: readonly string[]): string {
  return items.length <= 1
    ? (items[0] ?? '')
    : `${items.slice(0, -1).join(', ')} and ${items[items.length - 1]}`
}

/** What a value is, for `type` messages: "a string", "the number 1.5", "null". */
function kindOf(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  switch (typeof value) {
    case 'number':
      return `the number ${value}`
    case 'boolean':
      return `the boolean ${value}`
    case 'string':
      return 'a string'
    default:
      return 'an object'
  }
}

/** The tokens of a decoded JSON Pointer: "/a~1b/0" -> ["a/b", "0"]. */
function tokens(pointer: string): string[] {
  return pointer === ''
    ? []
    : pointer
        .slice(1)
        .split('/')
        .map((t) => t.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** Own member `token` of an object or array (never an inherited one such as "constructor"). */
function member(node: unknown, token: string): unknown {
  if (Array.isArray(node)) return /^\d+$/.test(token) ? node[Number(token)] : undefined
  return isObject(node) && Object.hasOwn(node, token) ? node[token] : undefined
}

/** The part of `value` at a JSON Pointer. */
function valueAt(value: unknown, pointer: string): unknown {
  return tokens(pointer).reduce<unknown>(member, value)
}

/** The schema node at an evaluation path, following each `$ref` as the evaluator did. */
function schemaAt(context: MessageContext, path: string[]): unknown {
  let node: unknown = context.schema
  for (const token of path) {
    if (token === '$ref' && isObject(node) && typeof node.$ref === 'string') {
      const uri = (node.__absolute_ref__ as string | undefined) ?? node.$ref
      node = context.lookup[uri]
    } else {
      node = member(node, token)
    }
  }
  return node
}

/**
 * Whether an evaluation path passes through `propertyNames`: below it the instance is a property
 * name (the last token of the instance location), not the property's value.
 */
function underPropertyNames(path: readonly string[]): boolean {
  // Tokens alternate between keywords and the names or indexes of their subschemas.
  let keywordNext = true
  for (const token of path) {
    if (!keywordNext) {
      keywordNext = true
      continue
    }
    if (token === 'propertyNames') return true
    const shape = Object.hasOwn(supportedKeywords, token)
      ? supportedKeywords[token as keyof typeof supportedKeywords].shape
      : undefined
    keywordNext = !(
      shape === 'schemaMap' ||
      shape === 'patternSchemaMap' ||
      shape === 'schemaArray'
    )
  }
  return false
}

/** The first token of `pointer` below `prefix`, or undefined when it is not below it. */
function tokenBelow(pointer: string, prefix: string): string | undefined {
  if (!pointer.startsWith(`${prefix}/`)) return undefined
  return tokens(pointer.slice(prefix.length))[0]
}

/**
 * Rewrites @cfworker/json-schema's output units into json-validate's errors, each message naming
 * the keyword and stating the rule that was broken and what the value is, e.g.
 * `exclusiveMinimum: 0 must be greater than 0.` where the evaluator says "0 is less than 0.".
 *
 * The facts come from the schema and the value, not from the evaluator's wording: the keyword's
 * value is read at the unit's evaluation path (through `$ref`), the instance at its location, and
 * for an applicator (`properties`, `items`, `allOf`…) the failing property, item or subschema
 * from the nested units that follow it. A `false` subschema, which the evaluator sees as
 * `{"not": {}}` (scan.ts), is reported as the keyword `false` at the subschema's own location.
 *
 * @example
 * describeErrors(units, { value: { amount: 0 }, schema, lookup }, 100)
 * // [{ instanceLocation: '/amount', keyword: 'exclusiveMinimum',
 * //    keywordLocation: '/properties/amount/exclusiveMinimum',
 * //    error: 'exclusiveMinimum: 0 must be greater than 0.' }, …]
 * @param units - every unit of the evaluation, locations already decoded to JSON Pointers
 * @param max - how many errors to describe (the first ones)
 */
export function describeErrors(
  units: readonly ValidationError[],
  context: MessageContext,
  max: number,
): ValidationError[] {
  // How many units of the same keyword at the same place came before: the n-th "required" unit
  // of an object is its n-th missing property.
  const seen = new Map<string, number>()
  return units.slice(0, max).map((unit, i) => {
    const key = `${unit.keyword}\u0000${unit.instanceLocation}\u0000${unit.keywordLocation}`
    const occurrence = seen.get(key) ?? 0
    seen.set(key, occurrence + 1)
    return describe(unit, units.slice(i + 1), occurrence, context)
  })
}

function describe(
  unit: ValidationError,
  after: readonly ValidationError[],
  occurrence: number,
  context: MessageContext,
): ValidationError {
  const path = tokens(unit.keywordLocation)
  const parentPath = path.slice(0, -1)
  const parent = schemaAt(context, parentPath)
  if (unit.keyword === 'not' && isFalseSchema(parent)) {
    const location = unit.keywordLocation.slice(0, -'/not'.length)
    return {
      ...unit,
      keyword: 'false',
      keywordLocation: location,
      error: 'false: no value is allowed here (the subschema is false).',
    }
  }
  const rule = member(parent, unit.keyword)
  const value = underPropertyNames(path)
    ? tokens(unit.instanceLocation).at(-1)
    : valueAt(context.value, unit.instanceLocation)
  const message = messageOf(unit, { rule, parent, value, after, occurrence })
  return { ...unit, error: `${unit.keyword}: ${message ?? unit.error}` }
}

interface Facts {
  /** The keyword's value in the schema. */
  rule: unknown
  /** The subschema holding the keyword. */
  parent: unknown
  /** The instance at the unit's location. */
  value: unknown
  /** The units after this one: an applicator's nested units come first among them. */
  after: readonly ValidationError[]
  occurrence: number
}

/** The message of one unit, or undefined to keep the evaluator's own (an unexpected shape). */
function messageOf(unit: ValidationError, facts: Facts): string | undefined {
  const { rule, value, after } = facts
  const next = after[0]
  /** The property or item of the first nested unit: the one that failed. */
  const child = () =>
    next === undefined ? undefined : tokenBelow(next.instanceLocation, unit.instanceLocation)
  /** The subschema token (index, pattern, name) of the first nested unit. */
  const branch = () =>
    next === undefined ? undefined : tokenBelow(next.keywordLocation, unit.keywordLocation)
  const count = typeof rule === 'number' ? rule : undefined

  switch (unit.keyword) {
    case '$ref':
      return typeof rule === 'string'
        ? `does not match the schema ${quote(rule)} points to.`
        : undefined
    case 'type': {
      const expected = Array.isArray(rule) ? `one of ${rule.join(', ')}` : String(rule)
      return `must be ${expected}; it is ${kindOf(value)}.`
    }
    case 'const':
      return `must be ${show(rule)}; it is ${show(value)}.`
    case 'enum':
      return `must be one of ${show(rule)}; it is ${show(value)}.`
    case 'not':
      return 'must not match the "not" subschema; it does.'
    case 'anyOf':
    case 'allOf':
    case 'oneOf': {
      if (!Array.isArray(rule)) return undefined
      const failing = new Set<string>()
      for (const u of after) {
        const index = tokenBelow(u.keywordLocation, unit.keywordLocation)
        if (index === undefined) break
        failing.add(index)
      }
      const n = rule.length
      if (unit.keyword === 'anyOf') {
        return `must match at least one of its ${plural(n, 'subschema', 'subschemas')}; it matches none.`
      }
      if (unit.keyword === 'allOf') {
        const failed = [...failing]
        return `must match all ${plural(n, 'subschema', 'subschemas')}; it fails ${failed.length === 1 ? 'subschema' : 'subschemas'} ${list(failed)}.`
      }
      const matching = rule.map((_, j) => String(j)).filter((j) => !failing.has(j))
      return `must match exactly one of its ${plural(n, 'subschema', 'subschemas')}; it matches ${matching.length === 0 ? 'none' : `${matching.length} (${list(matching)})`}.`
    }
    case 'if': {
      // The nested units sit under the sibling "then" or "else", not under "if".
      const taken =
        next === undefined
          ? undefined
          : tokenBelow(next.keywordLocation, unit.keywordLocation.slice(0, -'/if'.length))
      if (taken === 'then') return 'the value matches "if", so it must match "then"; it does not.'
      if (taken === 'else') {
        return 'the value does not match "if", so it must match "else"; it does not.'
      }
      return undefined
    }
    case 'required': {
      if (!Array.isArray(rule) || !isObject(value)) return undefined
      const missing = rule.filter((name) => !Object.hasOwn(value, name as string))
      const name = missing[facts.occurrence]
      return typeof name === 'string' ? `property ${quote(name)} is missing.` : undefined
    }
    case 'dependentRequired': {
      if (!isObject(rule) || !isObject(value)) return undefined
      const pairs: [string, string][] = []
      for (const [present, needed] of Object.entries(rule)) {
        if (!Object.hasOwn(value, present) || !Array.isArray(needed)) continue
        for (const name of needed) {
          if (!Object.hasOwn(value, name as string)) pairs.push([present, name as string])
        }
      }
      const pair = pairs[facts.occurrence]
      return pair
        ? `property ${quote(pair[1])} is required when ${quote(pair[0])} is present; it is missing.`
        : undefined
    }
    case 'minProperties':
    case 'maxProperties': {
      if (count === undefined || !isObject(value)) return undefined
      const bound = unit.keyword === 'minProperties' ? 'at least' : 'at most'
      return `must have ${bound} ${plural(count, 'property', 'properties')}; it has ${Object.keys(value).length}.`
    }
    case 'propertyNames': {
      const name = child()
      return name === undefined
        ? undefined
        : `the property name ${quote(name)} does not match the "propertyNames" subschema.`
    }
    case 'dependentSchemas': {
      const name = branch()
      return name === undefined
        ? undefined
        : `property ${quote(name)} is present, so the object must match its dependent subschema; it does not.`
    }
    case 'properties': {
      const name = child()
      return name === undefined
        ? undefined
        : `property ${quote(name)} does not match its subschema.`
    }
    case 'patternProperties': {
      const [name, pattern] = [child(), branch()]
      return name === undefined || pattern === undefined
        ? undefined
        : `property ${quote(name)} matches the pattern ${quote(pattern)}, so it must match that pattern's subschema; it does not.`
    }
    case 'additionalProperties':
    case 'unevaluatedProperties': {
      const name = child()
      if (name === undefined) return undefined
      const why =
        unit.keyword === 'additionalProperties'
          ? 'is not in "properties" nor matched by "patternProperties"'
          : 'was not evaluated by any other keyword'
      return isFalseSchema(rule)
        ? `property ${quote(name)} is not allowed: it ${why}, and "${unit.keyword}" is false.`
        : `property ${quote(name)} ${why}, so it must match the "${unit.keyword}" subschema; it does not.`
    }
    case 'minItems':
    case 'maxItems': {
      if (count === undefined || !Array.isArray(value)) return undefined
      const bound = unit.keyword === 'minItems' ? 'at least' : 'at most'
      return `must have ${bound} ${plural(count, 'item', 'items')}; it has ${value.length}.`
    }
    case 'prefixItems':
      return child() === undefined ? undefined : `item ${child()} does not match its subschema.`
    case 'items': {
      const index = child()
      if (index === undefined) return undefined
      if (!isFalseSchema(rule)) return `item ${index} does not match the "items" subschema.`
      const prefix = member(facts.parent, 'prefixItems')
      const n = Array.isArray(prefix) ? prefix.length : 0
      return `item ${index} is not allowed: "items" is false, so the array may hold only the ${plural(n, 'item', 'items')} of "prefixItems".`
    }
    case 'unevaluatedItems': {
      const index = child()
      if (index === undefined) return undefined
      const why = 'was not evaluated by any other keyword'
      return isFalseSchema(rule)
        ? `item ${index} is not allowed: it ${why}, and "unevaluatedItems" is false.`
        : `item ${index} ${why}, so it must match the "unevaluatedItems" subschema; it does not.`
    }
    case 'contains': {
      if (!Array.isArray(value)) return undefined
      return `must contain at least one item matching the "contains" subschema; ${value.length === 0 ? 'it is empty' : `none of its ${plural(value.length, 'item', 'items')} does`}.`
    }
    case 'minContains':
    case 'maxContains': {
      if (count === undefined || !Array.isArray(value)) return undefined
      const bound = unit.keyword === 'minContains' ? 'at least' : 'at most'
      const rule2 = `must contain ${bound} ${plural(count, 'item', 'items')} matching the "contains" subschema`
      // The evaluator does not look at the items of an array shorter than minContains.
      if (unit.keyword === 'minContains' && value.length < count) {
        return `${rule2}; it has only ${plural(value.length, 'item', 'items')}.`
      }
      const found = /(\d+) items were found/.exec(unit.error)?.[1]
      return found === undefined ? undefined : `${rule2}; it contains ${found}.`
    }
    case 'uniqueItems': {
      const [, a, b] = /indexes (\d+) and (\d+)/.exec(unit.error) ?? []
      return a === undefined ? undefined : `items must be unique; items ${a} and ${b} are equal.`
    }
    case 'minimum':
      return `${value} must be greater than or equal to ${rule}.`
    case 'maximum':
      return `${value} must be less than or equal to ${rule}.`
    case 'exclusiveMinimum':
      return `${value} must be greater than ${rule}.`
    case 'exclusiveMaximum':
      return `${value} must be less than ${rule}.`
    case 'multipleOf':
      return `${value} must be a multiple of ${rule}.`
    case 'minLength':
    case 'maxLength': {
      if (count === undefined || typeof value !== 'string') return undefined
      const bound = unit.keyword === 'minLength' ? 'at least' : 'at most'
      // Characters as JSON Schema counts them: Unicode code points.
      const length = [...value].length
      return `must be ${bound} ${plural(count, 'character', 'characters')} long; it has ${length}.`
    }
    case 'pattern':
      return `must match the regular expression ${show(rule)}; it does not.`
    default:
      return undefined
  }
}
