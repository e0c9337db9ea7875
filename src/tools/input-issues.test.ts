import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { toInputIssues } from './input-issues.js'

const schema = z.strictObject({
  secret: z.string(),
  nested: z.strictObject({ n: z.number() }),
})

const issuesOf = (input: unknown) => {
  const parsed = schema.safeParse(input)
  if (parsed.success) throw new Error('expected a refusal')
  return toInputIssues(parsed.error)
}

describe('toInputIssues', () => {
  it('says a missing field is required, with the type it takes, not "received undefined"', () => {
    expect(issuesOf({ nested: {} })).toEqual([
      { path: '/secret', message: 'Required (expected string)' },
      { path: '/nested/n', message: 'Required (expected number)' },
    ])
  })

  it("keeps Zod's words for a value of the wrong type, and escapes the pointer", () => {
    expect(issuesOf({ secret: 7, nested: { n: 1 } })).toEqual([
      { path: '/secret', message: 'Invalid input: expected string, received number' },
    ])
    const parsed = z.object({ 'a/b~': z.string() }).safeParse({ 'a/b~': null })
    expect(parsed.success || toInputIssues(parsed.error)).toEqual([
      { path: '/a~1b~0', message: 'Invalid input: expected string, received null' },
    ])
  })
})
