import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import { checkValue, readCheckReply, readVerdict } from './check.js'

// checkValue never throws: what a schema or a shape check raises becomes an outcome.

function toolWith(input: z.ZodType, check: ToolDefinition['check'] = () => {}): ToolDefinition {
  return { id: 't', input, check } as unknown as ToolDefinition
}

describe('checkValue', () => {
  it('answers invalid for an object whose length Zod cannot compare, and the schema threw before', () => {
    const tool = toolWith(z.object({ items: z.array(z.number()).max(2) }))
    expect(checkValue(tool, { items: { length: { toString: true } } })).toEqual({
      status: 'invalid',
      issues: [
        {
          path: '/items',
          message:
            'Invalid input: an object whose "length" member is an object or an array cannot be validated',
        },
      ],
    })
  })

  it("answers refused with the ToolError of the tool's shape check", () => {
    const tool = toolWith(z.object({}), () => {
      throw new ToolError('input_too_deep', 'too deep', { field: '/x' })
    })
    expect(checkValue(tool, {})).toEqual({
      status: 'refused',
      error: { code: 'input_too_deep', message: 'too deep', details: { field: '/x' } },
    })
  })

  it('answers crash, with the error name only, when the schema or the check itself fails', () => {
    const faultySchema = toolWith(
      z.string().refine(() => {
        throw new SyntaxError('quoting the secret input')
      }),
    )
    expect(checkValue(faultySchema, 'x')).toEqual({ status: 'crash', name: 'SyntaxError' })
    const faultyCheck = toolWith(z.string(), () => {
      throw new RangeError('quoting the secret input')
    })
    expect(checkValue(faultyCheck, 'x')).toEqual({ status: 'crash', name: 'RangeError' })
  })
})

describe('a verdict-only check', () => {
  const hashLike = toolWith(z.object({ input: z.string() }))

  it('answers valid with no form, and the same refusals as a full check', () => {
    expect(checkValue(hashLike, { input: 'abc' }, true)).toEqual({ status: 'valid' })
    expect(readVerdict(checkValue(hashLike, { input: 'abc' }))).toEqual({ status: 'valid' })
    expect(checkValue(hashLike, { input: 1 }, true)).toEqual(checkValue(hashLike, { input: 1 }))
  })

  it('is never read as a checked input: a tool must not run, nor a payment be fingerprinted, without the form', () => {
    expect(readCheckReply(checkValue(hashLike, { input: 'abc' }, true))).toEqual({
      status: 'crash',
      name: 'NoCanonicalForm',
    })
  })
})
