import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../../test/helpers/tools.js'
import { SUPPORTED_KEYWORDS } from './keywords.js'
import { MAX_SCHEMA_NESTING, scanSchema } from './scan.js'

describe('scanSchema', () => {
  it('treats names under properties, patternProperties, $defs and dependentSchemas as names', () => {
    const schema = {
      properties: { format: { type: 'string' }, $ref: { type: 'integer' }, bogus: true },
      patternProperties: { '^x-': { title: 'ext' } },
      $defs: { items: { type: 'null' } },
      dependentSchemas: { frobnicate: { required: ['a'] } },
    }
    const { nodes } = scanSchema(schema)
    expect(nodes.map((n) => n.location)).toEqual([
      '',
      '/properties/format',
      '/properties/$ref',
      '/patternProperties/^x-',
      '/$defs/items',
      '/dependentSchemas/frobnicate',
    ])
  })

  it('treats enum, const, default and examples values as data', () => {
    const data = { $dynamicRef: '#x', unknownKeyword: 1, $ref: 'https://example.com' }
    expect(() =>
      scanSchema({ enum: [data], const: data, default: data, examples: [data] }),
    ).not.toThrow()
  })

  it('names an unsupported keyword and its JSON Pointer', () => {
    const error = toolErrorOf(() =>
      scanSchema({ properties: { 'a/b': { items: { frobnicate: true } } } }),
    )
    expect(error.code).toBe('unsupported_keyword')
    expect(error.details).toEqual({
      keyword: 'frobnicate',
      schemaLocation: '/properties/a~1b/items/frobnicate',
    })
    expect(error.message).toBe('unsupported keyword "frobnicate" at /properties/a~1b/items')
  })

  it('explains well-known refused keywords', () => {
    const error = toolErrorOf(() => scanSchema({ $dynamicRef: '#meta' }))
    expect(error.message).toBe(
      'unsupported keyword "$dynamicRef" at the schema root: dynamic references are not supported',
    )
    expect(toolErrorOf(() => scanSchema({ definitions: {} })).details?.keyword).toBe('definitions')
    expect(toolErrorOf(() => scanSchema({ $defs: { a: { $id: 'x' } } })).details).toEqual({
      keyword: '$id',
      schemaLocation: '/$defs/a/$id',
    })
  })

  it('accepts only local references', () => {
    for (const ref of ['https://example.com/s.json', 'other.json#/a', '/abs']) {
      const error = toolErrorOf(() => scanSchema({ items: { $ref: ref } }))
      expect(error.code).toBe('unsupported_ref')
      expect(error.details).toEqual({ ref, schemaLocation: '/items/$ref' })
    }
    expect(() => scanSchema({ $ref: '#/$defs/a', $defs: { a: true } })).not.toThrow()
  })

  it('accepts only the draft 2020-12 dialect', () => {
    expect(() =>
      scanSchema({ $schema: 'https://json-schema.org/draft/2020-12/schema' }),
    ).not.toThrow()
    const error = toolErrorOf(() =>
      scanSchema({ $schema: 'http://json-schema.org/draft-07/schema#' }),
    )
    expect(error.code).toBe('unsupported_dialect')
  })

  it('checks keyword value shapes', () => {
    const bad = [
      [{ type: 'text' }, '/type'],
      [{ type: ['string', 'string'] }, '/type'],
      [{ required: 'a' }, '/required'],
      [{ minLength: -1 }, '/minLength'],
      [{ minLength: 1.5 }, '/minLength'],
      [{ multipleOf: 0 }, '/multipleOf'],
      [{ pattern: '(' }, '/pattern'],
      [{ patternProperties: { '[': true } }, '/patternProperties'],
      [{ allOf: [] }, '/allOf'],
      [{ enum: 'a' }, '/enum'],
      [{ $anchor: '#bad' }, '/$anchor'],
      [{ dependentRequired: { a: [1] } }, '/dependentRequired'],
    ] as const
    for (const [schema, location] of bad) {
      const error = toolErrorOf(() => scanSchema(schema))
      expect(error.code, JSON.stringify(schema)).toBe('invalid_schema')
      expect(error.details?.schemaLocation).toBe(location)
    }
    expect(toolErrorOf(() => scanSchema({ items: 3 })).details).toEqual({
      schemaLocation: '/items',
    })
  })

  it('caps subschema nesting', () => {
    let schema: Record<string, unknown> = { type: 'string' }
    for (let i = 0; i < MAX_SCHEMA_NESTING; i++) schema = { items: schema }
    expect(() => scanSchema(schema)).not.toThrow()
    const error = toolErrorOf(() => scanSchema({ items: schema }))
    expect(error.code).toBe('schema_too_deep')
    expect(error.details?.limit).toBe(MAX_SCHEMA_NESTING)
  })

  it('drops format from the evaluator copy and records uniqueItems', () => {
    const scanned = scanSchema({
      format: 'email',
      properties: { a: { format: 'date', uniqueItems: true } },
    })
    expect(scanned.schema).toEqual({ properties: { a: { uniqueItems: true } } })
    expect(scanned.usesUniqueItems).toBe(true)
  })

  it('keeps a "__proto__" property name as an own key', () => {
    const schema = JSON.parse('{"properties":{"__proto__":{"type":"number"}}}')
    const copy = scanSchema(schema).schema as { properties: object }
    expect(Object.keys(copy.properties)).toEqual(['__proto__'])
  })

  it('lists the supported keywords', () => {
    expect(SUPPORTED_KEYWORDS).toContain('unevaluatedProperties')
    expect(SUPPORTED_KEYWORDS).not.toContain('$dynamicRef')
    expect(SUPPORTED_KEYWORDS).toHaveLength(54)
  })
})
