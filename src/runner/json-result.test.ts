import { describe, expect, it } from 'vitest'
import { JsonResult } from './json-result.js'

describe('JsonResult', () => {
  it('holds the UTF-8 JSON of a result and parses it once, on demand', () => {
    const result = JsonResult.of({ text: 'é😀', n: 1, gone: undefined })
    expect(new TextDecoder().decode(result.bytes)).toBe('{"text":"é😀","n":1}')
    const value = result.value()
    expect(value).toEqual({ text: 'é😀', n: 1 })
    expect(result.value()).toBe(value)
  })
})
