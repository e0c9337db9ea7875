import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../../test/helpers/tools.js'
import {
  jsonValidate,
  jsonValidateInput,
  MAX_ERRORS,
  MAX_SCHEMA_BYTES,
  MAX_UNIQUE_ITEMS,
} from './index.js'

describe('jsonValidate', () => {
  it('reports every error with JSON Pointers', () => {
    const result = jsonValidate({
      value: { name: 'Ada', age: '36' },
      schema: {
        type: 'object',
        required: ['name', 'email'],
        properties: { age: { type: 'integer' } },
      },
    })
    expect(result).toEqual({
      valid: false,
      error_count: 3,
      truncated: false,
      errors: [
        {
          instanceLocation: '',
          keyword: 'required',
          keywordLocation: '/required',
          error: 'required: property "email" is missing.',
        },
        {
          instanceLocation: '',
          keyword: 'properties',
          keywordLocation: '/properties',
          error: 'properties: property "age" does not match its subschema.',
        },
        {
          instanceLocation: '/age',
          keyword: 'type',
          keywordLocation: '/properties/age/type',
          error: 'type: must be integer; it is a string.',
        },
      ],
    })
  })

  it('accepts a valid value', () => {
    expect(
      jsonValidate({ value: [1, 2], schema: { items: { type: 'integer' }, uniqueItems: true } }),
    ).toEqual({ valid: true, error_count: 0, truncated: false, errors: [] })
  })

  it('decodes pointer escapes in locations', () => {
    const result = jsonValidate({
      value: { 'a b/c~%': 1 },
      schema: { properties: { 'a b/c~%': { type: 'string' } } },
    })
    expect(result.errors[1]).toMatchObject({
      instanceLocation: '/a b~1c~0%',
      keywordLocation: '/properties/a b~1c~0%/type',
    })
  })

  it('follows local $ref, $defs and $anchor', () => {
    const schema = {
      $id: 'https://example.com/person',
      $defs: { name: { $anchor: 'name', type: 'string', minLength: 1 } },
      properties: { first: { $ref: '#/$defs/name' }, last: { $ref: '#name' } },
    }
    expect(jsonValidate({ value: { first: 'A', last: 'B' }, schema }).valid).toBe(true)
    const result = jsonValidate({ value: { first: '', last: 2 }, schema })
    expect(result.errors.map((e) => e.keywordLocation)).toEqual([
      '/properties',
      '/properties/first/$ref',
      '/properties/first/$ref/minLength',
      '/properties',
      '/properties/last/$ref',
      '/properties/last/$ref/type',
    ])
  })

  it('treats format as an annotation (draft 2020-12 default)', () => {
    expect(jsonValidate({ value: 'not an email', schema: { format: 'email' } }).valid).toBe(true)
  })

  it('fixes the evaluator location of dependentRequired', () => {
    const result = jsonValidate({ value: { a: 1 }, schema: { dependentRequired: { a: ['b'] } } })
    expect(result.errors).toEqual([
      {
        instanceLocation: '',
        keyword: 'dependentRequired',
        keywordLocation: '/dependentRequired',
        error: 'dependentRequired: property "b" is required when "a" is present; it is missing.',
      },
    ])
  })

  it(`caps errors at ${MAX_ERRORS} and counts them all`, () => {
    const result = jsonValidate({
      value: Array.from({ length: 150 }, (_, i) => i),
      schema: { items: { type: 'string' } },
    })
    expect(result.valid).toBe(false)
    // Each failing item gives two output units: the "items" unit and the nested "type" unit.
    expect(result.error_count).toBe(300)
    expect(result.truncated).toBe(true)
    expect(result.errors).toHaveLength(MAX_ERRORS)
    expect(result.errors[0]).toMatchObject({ instanceLocation: '', keyword: 'items' })
    expect(result.errors[1]).toMatchObject({ instanceLocation: '/0', keyword: 'type' })
    expect(result.errors[99]).toMatchObject({ instanceLocation: '/49', keyword: 'type' })
  })

  it('rejects an unsupported keyword, naming it', () => {
    const error = toolErrorOf(() =>
      jsonValidate({ value: 1, schema: { properties: { a: { $dynamicAnchor: 'x' } } } }),
    )
    expect(error.code).toBe('unsupported_keyword')
    expect(error.message).toContain('"$dynamicAnchor"')
    expect(error.details).toEqual({
      keyword: '$dynamicAnchor',
      schemaLocation: '/properties/a/$dynamicAnchor',
    })
  })

  it('rejects a remote $ref', () => {
    const error = toolErrorOf(() =>
      jsonValidate({ value: 1, schema: { $ref: 'https://json-schema.org/draft/2020-12/schema' } }),
    )
    expect(error.code).toBe('unsupported_ref')
    expect(error.details).toEqual({
      ref: 'https://json-schema.org/draft/2020-12/schema',
      schemaLocation: '/$ref',
    })
  })

  it('rejects a local $ref that points nowhere, even in an unused branch', () => {
    const error = toolErrorOf(() =>
      jsonValidate({ value: 1, schema: { anyOf: [true, { $ref: '#/$defs/missing' }] } }),
    )
    expect(error.code).toBe('unresolved_ref')
    expect(error.details).toEqual({ ref: '#/$defs/missing', schemaLocation: '/anyOf/1/$ref' })
  })

  it('rejects reference cycles that would never terminate', () => {
    expect(toolErrorOf(() => jsonValidate({ value: 1, schema: { $ref: '#' } })).code).toBe(
      'ref_cycle',
    )
    const error = toolErrorOf(() =>
      jsonValidate({
        value: 1,
        schema: {
          $defs: { a: { allOf: [{ $ref: '#/$defs/b' }] }, b: { not: { $ref: '#/$defs/a' } } },
        },
      }),
    )
    expect(error.code).toBe('ref_cycle')
    // Recursion through properties/items descends into the value, so it is fine.
    const tree = { type: 'object', properties: { children: { items: { $ref: '#' } } } }
    expect(
      jsonValidate({ value: { children: [{ children: [] }, { children: [3] }] }, schema: tree })
        .valid,
    ).toBe(false)
  })

  it('caps schema size and depth', () => {
    const big = { enum: ['x'.repeat(MAX_SCHEMA_BYTES)] }
    const tooLarge = toolErrorOf(() => jsonValidate({ value: 1, schema: big }))
    expect(tooLarge.code).toBe('schema_too_large')
    expect(tooLarge.details?.limit).toBe(MAX_SCHEMA_BYTES)
    let deep: unknown = 1
    for (let i = 0; i < 200; i++) deep = [deep]
    expect(toolErrorOf(() => jsonValidate({ value: 1, schema: { const: deep } })).code).toBe(
      'schema_too_deep',
    )
  })

  it('caps value depth, and array length under uniqueItems', () => {
    let deep: unknown = 1
    for (let i = 0; i < 200; i++) deep = [deep]
    expect(toolErrorOf(() => jsonValidate({ value: deep, schema: {} })).code).toBe('value_too_deep')
    const long = Array.from({ length: MAX_UNIQUE_ITEMS + 1 }, (_, i) => i)
    expect(jsonValidate({ value: long, schema: { type: 'array' } }).valid).toBe(true)
    const error = toolErrorOf(() => jsonValidate({ value: long, schema: { uniqueItems: true } }))
    expect(error.code).toBe('value_too_large')
  })

  it('rejects lone surrogates in value and schema', () => {
    expect(toolErrorOf(() => jsonValidate({ value: ['\uD800'], schema: {} })).details).toEqual({
      field: '/value/0',
      offset: 0,
    })
    expect(
      toolErrorOf(() => jsonValidate({ value: 1, schema: { const: '\uDC00' } })).details,
    ).toEqual({ field: '/schema/const', offset: 0 })
  })

  it('reports a stack-exhausting evaluation as validation_too_complex', () => {
    // The evaluator spreads a nested error list into one push() call: 200,000 arguments here.
    const value = { a: Array.from({ length: 100_000 }, () => 0) }
    const schema = { properties: { a: { items: { type: 'string' } } } }
    const error = toolErrorOf(() => jsonValidate({ value, schema }))
    expect(error.code).toBe('validation_too_complex')
  })

  it('requires value and an object schema', () => {
    expect(jsonValidateInput.safeParse({ schema: {} }).success).toBe(false)
    expect(jsonValidateInput.safeParse({ value: 1, schema: true }).success).toBe(false)
    expect(jsonValidateInput.safeParse({ value: null, schema: {} }).success).toBe(true)
    expect(jsonValidateInput.safeParse({ value: 1, schema: {}, extra: 1 }).success).toBe(false)
  })

  // Found by fuzzing (test/tools.fuzz.test.ts): z.record rebuilt the schema object and dropped an
  // own "__proto__" key, so the schema below validated everything instead of being refused.
  it('refuses a "__proto__" keyword at the schema root, as parsed from JSON', () => {
    const body = JSON.parse('{"value": 5, "schema": {"__proto__": {"type": "string"}}}')
    const parsed = jsonValidateInput.parse(body)
    expect(Object.hasOwn(parsed.schema, '__proto__')).toBe(true)
    const error = toolErrorOf(() => jsonValidate(parsed))
    expect([error.code, error.details]).toEqual([
      'unsupported_keyword',
      { keyword: '__proto__', schemaLocation: '/__proto__' },
    ])
    expect(jsonValidateInput.safeParse({ value: 1, schema: [] }).error?.issues).toEqual([
      { code: 'custom', path: ['schema'], message: 'Invalid input: expected object' },
    ])
  })

  // Found by fuzzing: JSON.parse turns 1e400 into Infinity, which the evaluator then compared.
  it('refuses numbers beyond the double range in value and schema', () => {
    const body = jsonValidateInput.parse(JSON.parse('{"value": {"a": [1e400]}, "schema": {}}'))
    const error = toolErrorOf(() => jsonValidate(body))
    expect([error.code, error.details]).toEqual(['number_out_of_range', { field: '/value/a/0' }])
    const schema = jsonValidateInput.parse(
      JSON.parse('{"value": 1, "schema": {"maximum": -1e400}}'),
    )
    expect(toolErrorOf(() => jsonValidate(schema)).details).toEqual({ field: '/schema/maximum' })
  })
})

/** The messages of validating `value` against `schema`, in order. */
const messages = (value: unknown, schema: Record<string, unknown>) =>
  jsonValidate({ value, schema }).errors.map((e) => e.error)

// Every keyword's message names the keyword, the rule the schema states and what the value is.
// The evaluator's own messages said, among others, "0 is less than 0." for exclusiveMinimum 0 and
// "does not have at least 2 properties" for maxProperties 2.
describe('jsonValidate messages', () => {
  it.each([
    [
      'exclusiveMinimum',
      { amount: 0 },
      { properties: { amount: { exclusiveMinimum: 0 } } },
      [
        'properties: property "amount" does not match its subschema.',
        'exclusiveMinimum: 0 must be greater than 0.',
      ],
    ],
    [
      'exclusiveMaximum',
      10,
      { exclusiveMaximum: 10 },
      ['exclusiveMaximum: 10 must be less than 10.'],
    ],
    ['minimum', -1, { minimum: 0 }, ['minimum: -1 must be greater than or equal to 0.']],
    ['maximum', 3.5, { maximum: 3 }, ['maximum: 3.5 must be less than or equal to 3.']],
    ['multipleOf', 7, { multipleOf: 2 }, ['multipleOf: 7 must be a multiple of 2.']],
    ['type', 1.5, { type: 'integer' }, ['type: must be integer; it is the number 1.5.']],
    [
      'type list',
      true,
      { type: ['string', 'null'] },
      ['type: must be one of string, null; it is the boolean true.'],
    ],
    ['const', 'a', { const: 2 }, ['const: must be 2; it is "a".']],
    ['enum', 4, { enum: [1, 2, 3] }, ['enum: must be one of [1,2,3]; it is 4.']],
    [
      'enum, long',
      'x'.repeat(80),
      { enum: ['y'.repeat(80)] },
      [`enum: must be one of ["${'y'.repeat(57)}…; it is "${'x'.repeat(58)}….`],
    ],
    [
      'minLength',
      '💩',
      { minLength: 2 },
      ['minLength: must be at least 2 characters long; it has 1.'],
    ],
    [
      'maxLength',
      'foo',
      { maxLength: 2 },
      ['maxLength: must be at most 2 characters long; it has 3.'],
    ],
    [
      'pattern',
      'abc',
      { pattern: '^a*$' },
      ['pattern: must match the regular expression "^a*$"; it does not.'],
    ],
    ['minItems', [], { minItems: 1 }, ['minItems: must have at least 1 item; it has 0.']],
    ['maxItems', [1, 2, 3], { maxItems: 2 }, ['maxItems: must have at most 2 items; it has 3.']],
    [
      'uniqueItems',
      [1, 2, 1],
      { uniqueItems: true },
      ['uniqueItems: items must be unique; items 0 and 2 are equal.'],
    ],
    [
      'minProperties',
      {},
      { minProperties: 1 },
      ['minProperties: must have at least 1 property; it has 0.'],
    ],
    [
      'maxProperties',
      { a: 1, b: 2, c: 3 },
      { maxProperties: 2 },
      ['maxProperties: must have at most 2 properties; it has 3.'],
    ],
    [
      'required',
      {},
      { required: ['a', 'b"c'] },
      ['required: property "a" is missing.', 'required: property "b\\"c" is missing.'],
    ],
    [
      'dependentRequired',
      { a: 1, c: 1 },
      { dependentRequired: { a: ['b'], c: ['a', 'd'] } },
      [
        'dependentRequired: property "b" is required when "a" is present; it is missing.',
        'dependentRequired: property "d" is required when "c" is present; it is missing.',
      ],
    ],
    [
      'contains, empty',
      [],
      { contains: { type: 'string' } },
      ['contains: must contain at least one item matching the "contains" subschema; it is empty.'],
    ],
    [
      'contains, none',
      [1, 2],
      { contains: { type: 'string' } },
      [
        'contains: must contain at least one item matching the "contains" subschema; none of its 2 items does.',
      ],
    ],
    [
      'minContains',
      ['a', 1, 2],
      { contains: { type: 'string' }, minContains: 2 },
      [
        'type: must be string; it is the number 1.',
        'type: must be string; it is the number 2.',
        'minContains: must contain at least 2 items matching the "contains" subschema; it contains 1.',
      ],
    ],
    [
      'minContains, short array',
      ['a'],
      { contains: { type: 'string' }, minContains: 2 },
      [
        'minContains: must contain at least 2 items matching the "contains" subschema; it has only 1 item.',
      ],
    ],
    [
      'maxContains',
      ['a', 'b'],
      { contains: { type: 'string' }, maxContains: 1 },
      [
        'maxContains: must contain at most 1 item matching the "contains" subschema; it contains 2.',
      ],
    ],
    ['not', 1, { not: { type: 'number' } }, ['not: must not match the "not" subschema; it does.']],
    [
      'anyOf',
      1.5,
      { anyOf: [{ type: 'integer' }, { minimum: 2 }] },
      [
        'anyOf: must match at least one of its 2 subschemas; it matches none.',
        'type: must be integer; it is the number 1.5.',
        'minimum: 1.5 must be greater than or equal to 2.',
      ],
    ],
    [
      'allOf',
      5,
      { allOf: [{ minimum: 6 }, { type: 'integer' }, { maximum: 4 }] },
      [
        'allOf: must match all 3 subschemas; it fails subschemas 0 and 2.',
        'minimum: 5 must be greater than or equal to 6.',
        'maximum: 5 must be less than or equal to 4.',
      ],
    ],
    [
      'oneOf, two match',
      3,
      { oneOf: [{ type: 'integer' }, { minimum: 2 }, { maximum: 1 }] },
      [
        'oneOf: must match exactly one of its 3 subschemas; it matches 2 (0 and 1).',
        'maximum: 3 must be less than or equal to 1.',
      ],
    ],
    [
      'oneOf, none match',
      'x',
      { oneOf: [{ type: 'integer' }] },
      [
        'oneOf: must match exactly one of its 1 subschema; it matches none.',
        'type: must be integer; it is a string.',
      ],
    ],
    [
      'if/then',
      -100,
      // biome-ignore lint/suspicious/noThenProperty: a JSON Schema keyword; never awaited
      { if: { minimum: -1000 }, then: { minimum: -10 } },
      [
        'if: the value matches "if", so it must match "then"; it does not.',
        'minimum: -100 must be greater than or equal to -10.',
      ],
    ],
    [
      'if/else',
      'no',
      { if: { type: 'number' }, else: { const: 'yes' } },
      [
        'if: the value does not match "if", so it must match "else"; it does not.',
        'const: must be "yes"; it is "no".',
      ],
    ],
    [
      '$ref',
      { a: 'x' },
      { $defs: { n: { type: 'number' } }, properties: { a: { $ref: '#/$defs/n' } } },
      [
        'properties: property "a" does not match its subschema.',
        '$ref: does not match the schema "#/$defs/n" points to.',
        'type: must be number; it is a string.',
      ],
    ],
    [
      'patternProperties',
      { foo: 1 },
      { patternProperties: { '^f': { type: 'string' } } },
      [
        'patternProperties: property "foo" matches the pattern "^f", so it must match that pattern\'s subschema; it does not.',
        'type: must be string; it is the number 1.',
      ],
    ],
    [
      'additionalProperties false',
      { a: 1, b: 2 },
      { properties: { a: {} }, additionalProperties: false },
      [
        'additionalProperties: property "b" is not allowed: it is not in "properties" nor matched by "patternProperties", and "additionalProperties" is false.',
        'false: no value is allowed here (the subschema is false).',
      ],
    ],
    [
      'additionalProperties schema',
      { b: 'x' },
      { additionalProperties: { type: 'number' } },
      [
        'additionalProperties: property "b" is not in "properties" nor matched by "patternProperties", so it must match the "additionalProperties" subschema; it does not.',
        'type: must be number; it is a string.',
      ],
    ],
    [
      'unevaluatedProperties false',
      { a: 1 },
      { unevaluatedProperties: false },
      [
        'unevaluatedProperties: property "a" is not allowed: it was not evaluated by any other keyword, and "unevaluatedProperties" is false.',
        'false: no value is allowed here (the subschema is false).',
      ],
    ],
    [
      'propertyNames',
      { foobar: {} },
      { propertyNames: { maxLength: 3 } },
      [
        'propertyNames: the property name "foobar" does not match the "propertyNames" subschema.',
        'maxLength: must be at most 3 characters long; it has 6.',
      ],
    ],
    [
      'dependentSchemas',
      { a: 1 },
      { dependentSchemas: { a: { required: ['b'] } } },
      [
        'dependentSchemas: property "a" is present, so the object must match its dependent subschema; it does not.',
        'required: property "b" is missing.',
      ],
    ],
    [
      'prefixItems and items false',
      [1, 'x', 3],
      { prefixItems: [{}, { type: 'number' }], items: false },
      [
        'prefixItems: item 1 does not match its subschema.',
        'type: must be number; it is a string.',
        'items: item 2 is not allowed: "items" is false, so the array may hold only the 2 items of "prefixItems".',
        'false: no value is allowed here (the subschema is false).',
      ],
    ],
    [
      'items',
      [1, 'x'],
      { items: { type: 'number' } },
      [
        'items: item 1 does not match the "items" subschema.',
        'type: must be number; it is a string.',
      ],
    ],
    [
      'unevaluatedItems',
      [1, 'x'],
      { prefixItems: [{}], unevaluatedItems: { type: 'number' } },
      [
        'unevaluatedItems: item 1 was not evaluated by any other keyword, so it must match the "unevaluatedItems" subschema; it does not.',
        'type: must be number; it is a string.',
      ],
    ],
  ] as const)('%s', (_name, value, schema, expected) => {
    expect(messages(value, schema as Record<string, unknown>)).toEqual(expected)
  })

  it('reports a false subschema as the keyword false at its own location', () => {
    expect(jsonValidate({ value: { a: 1 }, schema: { properties: { a: false } } }).errors).toEqual([
      {
        instanceLocation: '',
        keyword: 'properties',
        keywordLocation: '/properties',
        error: 'properties: property "a" does not match its subschema.',
      },
      {
        instanceLocation: '/a',
        keyword: 'false',
        keywordLocation: '/properties/a',
        error: 'false: no value is allowed here (the subschema is false).',
      },
    ])
  })

  it('reads rules through $ref, and never an inherited member such as "constructor"', () => {
    const result = jsonValidate({
      value: { constructor: 5 },
      schema: {
        $defs: { small: { maximum: 1 } },
        properties: { constructor: { $ref: '#/$defs/small' } },
      },
    })
    expect(result.errors.map((e) => [e.keywordLocation, e.error])).toEqual([
      ['/properties', 'properties: property "constructor" does not match its subschema.'],
      [
        '/properties/constructor/$ref',
        '$ref: does not match the schema "#/$defs/small" points to.',
      ],
      ['/properties/constructor/$ref/maximum', 'maximum: 5 must be less than or equal to 1.'],
    ])
  })
})
