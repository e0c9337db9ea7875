import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { hashInput } from './hash.js'
import { pipelineInput } from './pipeline/index.js'
import { safeParseUntrusted } from './untrusted-parse.js'

const MESSAGE =
  'Invalid input: an object whose "length" member is an object or an array cannot be validated'

/** The issues of a failed parse, as plain objects. */
const issuesOf = (result: { success: boolean; error?: z.ZodError }) =>
  result.error?.issues.map(({ code, path, message }) => ({ code, path, message }))

describe('safeParseUntrusted', () => {
  // The fuzz case of CI (seed 1966939964): Zod's `.min(1).max(12)` of the operations array
  // compares `[{"toString":true}]` with 12 although the value is no array.
  const pipelineCase = JSON.parse('{"input":"","operations":{"length":[{"toString":true}]}}')

  it('is needed: Zod 4 throws on an object whose length is an object, where an array or a string is expected', () => {
    expect(() => pipelineInput.safeParse(pipelineCase)).toThrow(
      new TypeError('Cannot convert object to primitive value'),
    )
    expect(() =>
      z
        .string()
        .max(3)
        .safeParse({ length: { toString: 1 } }),
    ).toThrow(TypeError)
  })

  it('refuses such a value with one issue at the object that holds the length', () => {
    expect(issuesOf(safeParseUntrusted(pipelineInput, pipelineCase))).toEqual([
      { code: 'custom', path: ['operations'], message: MESSAGE },
    ])
    const hash = JSON.parse('{"input":{"length":{"valueOf":{},"toString":[]}}}')
    expect(issuesOf(safeParseUntrusted(hashInput, hash))).toEqual([
      { code: 'custom', path: ['input'], message: MESSAGE },
    ])
  })

  it('refuses arrays nested 200,000 deep under length (a RangeError in Zod), walking them without recursion', () => {
    const deep = JSON.parse(`{"length":${'['.repeat(200_000)}${']'.repeat(200_000)}}`)
    expect(() => z.string().max(3).safeParse(deep)).toThrow(RangeError)
    expect(issuesOf(safeParseUntrusted(z.string().max(3), deep))).toEqual([
      { code: 'custom', path: [], message: MESSAGE },
    ])
  })

  it('names the first holder in document order, through arrays and objects', () => {
    const schema = z.object({ a: z.array(z.unknown()), b: z.array(z.string().min(1)) })
    const value = { a: [1, { c: [{ length: 2 }] }], b: [{ length: { toString: 0 } }] }
    expect(issuesOf(safeParseUntrusted(schema, value))).toEqual([
      { code: 'custom', path: ['b', '0'], message: MESSAGE },
    ])
  })

  it("gives the schema's own result whenever Zod does not throw", () => {
    expect(safeParseUntrusted(hashInput, { input: 'abc' })).toEqual({
      success: true,
      data: { input: 'abc', algorithm: 'SHA-256' },
    })
    // A numeric or string length compares without throwing: Zod's own issues.
    expect(issuesOf(safeParseUntrusted(z.string().max(3), { length: 9 }))).toEqual([
      {
        code: 'invalid_type',
        path: [],
        message: 'Invalid input: expected string, received object',
      },
      { code: 'too_big', path: [], message: 'Too big: expected unknown to be <=3' },
    ])
  })

  it('throws what the schema threw when the value holds no object-valued length: a fault of our own code', () => {
    const faulty = z.string().refine(() => {
      throw new SyntaxError('a refinement that fails')
    })
    expect(() => safeParseUntrusted(faulty, 'x')).toThrow(
      new SyntaxError('a refinement that fails'),
    )
    expect(() => safeParseUntrusted(faulty.optional(), 'x')).toThrow(SyntaxError)
  })
})
