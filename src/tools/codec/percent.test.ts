import { describe, expect, it } from 'vitest'
import { ToolError } from '../types.js'
import { percentDecodeStrict, percentEncode } from './percent.js'

const bytes = (value: string) => new TextEncoder().encode(value)

describe('percentEncode', () => {
  it('keeps only RFC 3986 unreserved characters', () => {
    expect(percentEncode(bytes("AZaz09-._~ !'()*+/?#&=%"))).toBe(
      'AZaz09-._~%20%21%27%28%29%2A%2B%2F%3F%23%26%3D%25',
    )
  })

  it("matches encodeURIComponent plus !'()* for UTF-8 text", () => {
    const sample = "Jürgen & 東京 😀 it's (a) *test*!"
    const expected = encodeURIComponent(sample).replace(
      /[!'()*]/g,
      (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`,
    )
    expect(percentEncode(bytes(sample))).toBe(expected)
  })

  it('encodes non-UTF-8 bytes one by one', () => {
    expect(percentEncode(new Uint8Array([0xff, 0x00, 0x41]))).toBe('%FF%00A')
  })
})

describe('percentDecodeStrict', () => {
  it('decodes %XX of either case and leaves + alone', () => {
    expect(new TextDecoder().decode(percentDecodeStrict(bytes('a%20b+c%c3%BC')))).toBe('a b+cü')
    expect([...percentDecodeStrict(bytes('%ff'))]).toEqual([0xff])
  })

  it('rejects a % without two hex digits, at its byte offset', () => {
    for (const [input, offset] of [
      ['ab%2', 2],
      ['%zz', 0],
      ['ok%', 2],
      ['é%4g', 2],
    ] as const) {
      let caught: unknown
      try {
        percentDecodeStrict(bytes(input))
      } catch (error) {
        caught = error
      }
      expect(caught).toBeInstanceOf(ToolError)
      expect((caught as ToolError).code).toBe('invalid_url_encoding')
      expect((caught as ToolError).details).toEqual({ offset })
    }
  })
})
