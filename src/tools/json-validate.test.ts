import { describe, expect, it } from 'vitest'
import {
  jsonValidate,
  jsonValidateInput,
  MAX_ERRORS,
  MAX_SCHEMA_BYTES,
  MAX_UNIQUE_ITEMS,
} from './json-validate.js'
import { toolErrorOf } from './test-helpers.js'

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
          error: 'Instance does not have required property "email".',
        },
        {
          instanceLocation: '',
          keyword: 'properties',
          keywordLocation: '/properties',
          error: 'Property "age" does not match schema.',
        },
        {
          instanceLocation: '/age',
          keyword: 'type',
          keywordLocation: '/properties/age/type',
          error: 'Instance type "string" is invalid. Expected "integer".',
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
        error: 'Instance has "a" but does not have "b".',
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
