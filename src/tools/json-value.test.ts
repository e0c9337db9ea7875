import { describe, expect, it } from 'vitest'
import { toolErrorOf as errorOf } from '../../test/helpers/tools.js'
import { inspectJson } from './json-value.js'

const options = { field: '/value', maxDepth: 3, tooDeep: 'value_too_deep' as const }

describe('inspectJson', () => {
  it('reports depth and the longest array', () => {
    expect(inspectJson(1, options)).toEqual({ depth: 0, longestArray: 0 })
    expect(inspectJson({ a: [1, 2, [3]] }, options)).toEqual({ depth: 3, longestArray: 3 })
  })

  it('rejects nesting beyond maxDepth with the pointer of the offending container', () => {
    const error = errorOf(() => inspectJson({ a: [[[1]]] }, options))
    expect(error.code).toBe('value_too_deep')
    expect(error.details).toEqual({ field: '/value/a/0/0', limit: 3 })
  })

  it('names lone surrogates in strings and keys by JSON Pointer', () => {
    const inString = errorOf(() => inspectJson({ 'a/b': ['ok', 'x\uDFFF'] }, options))
    expect(inString.code).toBe('invalid_unicode')
    expect(inString.details).toEqual({ field: '/value/a~1b/1', offset: 1 })
    const inKey = errorOf(() => inspectJson({ ok: { '\uD800': 1 } }, options))
    expect(inKey.details).toEqual({ field: '/value/ok', offset: 0 })
  })

  it('walks 200,000 levels without recursion', () => {
    const deep = JSON.parse(`${'['.repeat(200_000)}${']'.repeat(200_000)}`)
    const error = errorOf(() =>
      inspectJson(deep, { field: '', maxDepth: 128, tooDeep: 'json_too_deep' }),
    )
    expect(error.code).toBe('json_too_deep')
  })
})
