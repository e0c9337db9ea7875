import { describe, expect, it } from 'vitest'
import { ToolError } from './types.js'
import {
  assertWellFormed,
  firstLoneSurrogate,
  utf8DecodeStrict,
  utf8Encode,
  utf8Length,
} from './unicode.js'

describe('firstLoneSurrogate', () => {
  it('finds lone high and low surrogates and skips valid pairs', () => {
    expect(firstLoneSurrogate('plain')).toBe(-1)
    expect(firstLoneSurrogate('😀 ok')).toBe(-1)
    expect(firstLoneSurrogate('a\uD800b')).toBe(1)
    expect(firstLoneSurrogate('😀\uDC00')).toBe(2)
    expect(firstLoneSurrogate('ab\uD83D')).toBe(2)
  })
})

describe('assertWellFormed', () => {
  it('throws invalid_unicode naming field and offset, not content', () => {
    let caught: unknown
    try {
      assertWellFormed('secret\uD800', 'secret')
    } catch (error) {
      caught = error
    }
    expect(caught).toBeInstanceOf(ToolError)
    const error = caught as ToolError
    expect(error.code).toBe('invalid_unicode')
    expect(error.details).toEqual({ field: 'secret', offset: 6 })
    expect(error.message).toBe('secret is not well-formed Unicode: lone surrogate at offset 6')
  })

  it('accepts well-formed text', () => {
    expect(() => assertWellFormed('€😀', 'input')).not.toThrow()
  })
})

describe('UTF-8 helpers', () => {
  it('encodes and measures UTF-8', () => {
    expect([...utf8Encode('é€😀')]).toEqual([0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80])
    expect(utf8Length('é€😀')).toBe(9)
  })

  it('decodes strictly: invalid sequences give null, a BOM is kept', () => {
    expect(utf8DecodeStrict(new Uint8Array([0xff]))).toBeNull()
    expect(utf8DecodeStrict(new Uint8Array([0xc3]))).toBeNull()
    expect(utf8DecodeStrict(new Uint8Array([0xed, 0xa0, 0x80]))).toBeNull()
    expect(utf8DecodeStrict(new Uint8Array([0xef, 0xbb, 0xbf, 0x41]))).toBe('\uFEFFA')
  })
})
