import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../../test/helpers/tools.js'
import { resolveRefs } from './refs.js'
import { type SchemaObject, scanSchema } from './scan.js'

function resolve(schema: SchemaObject) {
  const scanned = scanSchema(schema)
  return resolveRefs(scanned.schema, scanned.nodes)
}

describe('resolveRefs', () => {
  it('indexes pointers and anchors under the root $id', () => {
    const lookup = resolve({
      $id: 'https://example.com/root.json',
      $defs: { a: { $anchor: 'here', type: 'string' } },
      $ref: '#here',
    })
    expect(lookup['https://example.com/root.json#here']).toEqual({
      $anchor: 'here',
      type: 'string',
    })
    expect(lookup['https://example.com/root.json#/$defs/a']).toBe(
      lookup['https://example.com/root.json#here'],
    )
  })

  it('resolves percent-encoded and escaped pointers', () => {
    expect(() =>
      resolve({
        $defs: { 'a b': true, 'c/d': true },
        allOf: [{ $ref: '#/$defs/a%20b' }, { $ref: '#/$defs/c~1d' }],
      }),
    ).not.toThrow()
  })

  it('rejects a pointer to a non-schema location', () => {
    const error = toolErrorOf(() => resolve({ enum: [1], $ref: '#/enum/0' }))
    expect(error.code).toBe('unresolved_ref')
    expect(error.details).toEqual({ ref: '#/enum/0', schemaLocation: '/$ref' })
  })

  it('finds in-place cycles through if/then/else and dependentSchemas', () => {
    expect(
      toolErrorOf(() => resolve(JSON.parse('{"if": true, "then": {"$ref": "#"}}'))).details,
    ).toEqual({
      schemaLocation: '',
    })
    expect(
      toolErrorOf(() =>
        resolve({ $defs: { x: { dependentSchemas: { k: { $ref: '#/$defs/x' } } } } }),
      ).code,
    ).toBe('ref_cycle')
  })

  it('allows recursion that descends into the value', () => {
    expect(() =>
      resolve({
        properties: { next: { $ref: '#' } },
        items: { $ref: '#' },
        additionalProperties: { $ref: '#' },
      }),
    ).not.toThrow()
  })
})
