// Test-only (excluded from the build): schemas and values for the json-validate fuzzers.
import fc from 'fast-check'
import { jsonValue } from './common.js'
import { invalidPattern, safePattern } from './json-schema-pattern.js'

/**
 * Fields whose strings the tool matches against caller-supplied regular expressions. The fuzzers
 * keep strings there short (no size-limit probes): tools still run on the main thread in this
 * branch, and even a linear pattern is quadratic when unanchored over a 1 MiB string.
 */
export const regexMatchedFields = ['value']

const name = fc.constantFrom(
  'a',
  'b',
  'id',
  'name',
  'x-y',
  '',
  'é',
  '__proto__',
  'constructor',
  '$ref',
  'type',
)
const count = fc.nat(4)
const number = fc.oneof(fc.integer({ min: -5, max: 5 }), fc.constantFrom(0.5, 1e308, -1e-7))
const typeName = fc.constantFrom(
  'array',
  'boolean',
  'integer',
  'null',
  'number',
  'object',
  'string',
)

/** A keyword and its value; unsupported or malformed ones are rare, so most schemas are accepted. */
function keyword(sub: fc.Arbitrary<unknown>): fc.Arbitrary<[string, unknown]> {
  const pair = <T>(key: string, value: fc.Arbitrary<T>) =>
    value.map((v): [string, unknown] => [key, v])
  const subs = fc.array(sub, { minLength: 1, maxLength: 3 })
  return fc.oneof(
    {
      arbitrary: pair(
        'type',
        fc.oneof(typeName, fc.uniqueArray(typeName, { minLength: 1, maxLength: 3 })),
      ),
      weight: 4,
    },
    { arbitrary: pair('properties', fc.dictionary(name, sub, { maxKeys: 3 })), weight: 3 },
    { arbitrary: pair('required', fc.uniqueArray(name, { maxLength: 3 })), weight: 2 },
    { arbitrary: pair('additionalProperties', sub), weight: 1 },
    {
      arbitrary: pair('patternProperties', fc.dictionary(safePattern, sub, { maxKeys: 2 })),
      weight: 2,
    },
    { arbitrary: pair('propertyNames', sub), weight: 1 },
    { arbitrary: pair('pattern', safePattern), weight: 3 },
    { arbitrary: pair('items', sub), weight: 2 },
    { arbitrary: pair('prefixItems', subs), weight: 1 },
    { arbitrary: pair('contains', sub), weight: 1 },
    { arbitrary: pair('uniqueItems', fc.boolean()), weight: 1 },
    { arbitrary: fc.oneof(...['allOf', 'anyOf', 'oneOf'].map((k) => pair(k, subs))), weight: 2 },
    {
      arbitrary: fc.oneof(
        ...['not', 'if', 'then', 'else', 'unevaluatedItems', 'unevaluatedProperties'].map((k) =>
          pair(k, sub),
        ),
      ),
      weight: 2,
    },
    { arbitrary: pair('dependentSchemas', fc.dictionary(name, sub, { maxKeys: 2 })), weight: 1 },
    {
      arbitrary: pair(
        'dependentRequired',
        fc.dictionary(name, fc.uniqueArray(name, { maxLength: 2 }), { maxKeys: 2 }),
      ),
      weight: 1,
    },
    {
      arbitrary: fc.oneof(
        ...[
          'minLength',
          'maxLength',
          'minItems',
          'maxItems',
          'minProperties',
          'maxProperties',
          'minContains',
          'maxContains',
        ].map((k) => pair(k, count)),
      ),
      weight: 2,
    },
    {
      arbitrary: fc.oneof(
        ...['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].map((k) =>
          pair(k, number),
        ),
      ),
      weight: 2,
    },
    { arbitrary: pair('multipleOf', fc.constantFrom(1, 2, 0.5, 0.1, 3)), weight: 1 },
    { arbitrary: pair('enum', fc.array(jsonValue, { minLength: 1, maxLength: 3 })), weight: 1 },
    { arbitrary: pair('const', jsonValue), weight: 1 },
    {
      arbitrary: pair(
        '$ref',
        fc.constantFrom(
          '#',
          '#/$defs/a',
          '#/$defs/b',
          '#/properties/a',
          '#/$defs/missing',
          '#node',
        ),
      ),
      weight: 1,
    },
    { arbitrary: pair('$anchor', fc.constantFrom('node', 'other')), weight: 1 },
    {
      arbitrary: fc.oneof(
        ...['title', 'description', 'format', '$comment'].map((k) =>
          pair(k, fc.constantFrom('email', 'date-time', 'x')),
        ),
      ),
      weight: 1,
    },
    // Rare: what the tool must refuse with a documented code.
    {
      arbitrary: fc.oneof(
        pair('pattern', invalidPattern),
        pair(
          'patternProperties',
          invalidPattern.map((p) => ({ [p]: true })),
        ),
      ),
      weight: 1,
    },
    {
      arbitrary: fc.oneof(
        pair('definitions', fc.constant({})),
        pair('$ref', fc.constant('https://example.com/s')),
        pair('$id', fc.constant('urn:x')),
      ),
      weight: 1,
    },
  )
}

/** A subschema: a boolean, or an object of up to four keywords. */
const schema = fc.letrec<{ schema: unknown }>((tie) => ({
  schema: fc.oneof(
    { depthSize: 'small', maxDepth: 4 },
    { arbitrary: fc.boolean(), weight: 1 },
    {
      arbitrary: fc
        .array(keyword(tie('schema')), { maxLength: 4 })
        .map((entries) => Object.fromEntries(entries)),
      weight: 4,
    },
  ),
})).schema

/** A root schema: an object, sometimes with `$defs` and `$schema`. */
const rootSchema = fc
  .tuple(
    fc.array(keyword(schema), { minLength: 1, maxLength: 4 }),
    fc.option(fc.record({ a: schema, b: schema }), { freq: 3 }),
    fc.option(
      fc.constantFrom(
        'https://json-schema.org/draft/2020-12/schema',
        'http://json-schema.org/draft-07/schema#',
      ),
      { freq: 6 },
    ),
  )
  .map(([entries, defs, dialect]) => ({
    ...Object.fromEntries(entries),
    ...(defs ? { $defs: defs } : {}),
    ...(dialect ? { $schema: dialect } : {}),
  }))

/** Valid request bodies of POST /json-validate: generated schemas against small JSON values. */
export const validInputs = fc.record({ value: jsonValue, schema: rootSchema })
