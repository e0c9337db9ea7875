import { describe, expect, it } from 'vitest'
import { parseCallArgs, resolveToolName } from './cli.js'
import { UsageError } from './usage.js'

describe('parseCallArgs', () => {
  it('reads the tool and one JSON object of arguments (default {})', () => {
    expect(parseCallArgs(['hash', '{"input":"abc"}'])).toEqual({
      tool: 'hash',
      args: { input: 'abc' },
    })
    expect(parseCallArgs(['payload_hash'])).toEqual({ tool: 'payload_hash', args: {} })
  })

  it.each([
    [[], /name the tool/],
    [['hash', '{'], /not JSON/],
    [['hash', '[1]'], /one JSON object/],
    [['hash', 'null'], /one JSON object/],
    [['hash', '{}', 'extra'], /unexpected extra/],
  ])('refuses %j', (words, message) => {
    expect(() => parseCallArgs(words)).toThrow(UsageError)
    expect(() => parseCallArgs(words)).toThrow(message)
  })
})

describe('resolveToolName', () => {
  const listed = ['payload_hash', 'payload_json_validate', 'payload_inspect', 'payload_tools_spend']

  it.each([
    ['payload_hash', 'payload_hash'],
    ['hash', 'payload_hash'],
    ['/hash', 'payload_hash'],
    ['json-validate', 'payload_json_validate'],
    ['payload-inspect', 'payload_inspect'],
    ['payload_tools_spend', 'payload_tools_spend'],
    ['nope', undefined],
  ])('%s -> %s', (name, expected) => {
    expect(resolveToolName(name, listed)).toBe(expected)
  })
})
