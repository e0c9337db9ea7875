import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { type JsonBounds, jsonBoundExceeded, jsonTextDeeperThan } from './json-bounds.js'

const bounds: JsonBounds = { depth: 3, nodes: 20, members: 4, string: 5, text: 12 }

describe('jsonBoundExceeded', () => {
  it('lets through a value within every bound', () => {
    expect(jsonBoundExceeded({ a: [1, 'abc'], b: null }, bounds)).toBeUndefined()
    expect(jsonBoundExceeded('abcde', bounds)).toBeUndefined()
  })

  it('names the first bound a value breaks', () => {
    expect(jsonBoundExceeded([[[[]]]], bounds)).toBe('it is nested more than 3 levels deep')
    expect(jsonBoundExceeded([1, 2, 3, 4, 5], bounds)).toBe(
      'an object or array holds more than 4 members',
    )
    expect(jsonBoundExceeded({ a: 1, b: 2, c: 3, d: 4, e: 5 }, bounds)).toBe(
      'an object or array holds more than 4 members',
    )
    expect(jsonBoundExceeded(['abcdef'], bounds)).toBe('a string is longer than 5')
    expect(jsonBoundExceeded({ abcdef: 1 }, bounds)).toBe('a key is longer than 5')
    expect(jsonBoundExceeded(['abcd', 'abcd', 'abcd', 'a'], bounds)).toBe(
      'its strings are longer than 12 in all',
    )
    const wide = [
      [1, 2, 3, 4],
      [1, 2, 3, 4],
      [1, 2, 3, 4],
      [1, 2, 3, 4],
    ]
    expect(jsonBoundExceeded(wide, bounds)).toBe('it holds more than 20 values')
  })

  it('stops at the first excess of a value nested far deeper than the stack', () => {
    let deep: unknown = 'x'.repeat(16_000)
    for (let i = 0; i < 200_000; i++) deep = [deep]
    const started = performance.now()
    expect(jsonBoundExceeded(deep, { ...bounds, depth: 32, nodes: 100 })).toBe(
      'it is nested more than 32 levels deep',
    )
    // A hang guard, not a target: the walk stops after 33 levels.
    expect(performance.now() - started).toBeLessThan(5_000)
  })
})

/** The nesting of a parsed JSON value, walked recursively: the oracle of the text scan. */
function nesting(value: unknown): number {
  if (value === null || typeof value !== 'object') return 0
  const children = Array.isArray(value) ? value : Object.values(value)
  return 1 + Math.max(0, ...children.map(nesting))
}

describe('jsonTextDeeperThan', () => {
  it('counts arrays and objects, not the brackets and escaped quotes inside strings', () => {
    expect(jsonTextDeeperThan('[[["]]]]"]]]', 2)).toBe(true)
    expect(jsonTextDeeperThan('[[["]]]]"]]]', 3)).toBe(false)
    const escaped = '{"a\\"[":[{"b]":"{{{{"}]}'
    expect(nesting(JSON.parse(escaped))).toBe(3)
    expect(jsonTextDeeperThan(escaped, 2)).toBe(true)
    expect(jsonTextDeeperThan(escaped, 3)).toBe(false)
    expect(jsonTextDeeperThan('["\\"]"]', 0)).toBe(true)
    expect(jsonTextDeeperThan('["\\"]"]', 1)).toBe(false)
    expect(jsonTextDeeperThan('"[[[[[["', 0)).toBe(false)
    expect(jsonTextDeeperThan(`${'['.repeat(3000)}${']'.repeat(3000)}`, 32)).toBe(true)
    // Runs of backslashes before a quote: an even run escapes itself, an odd one the quote too.
    expect(jsonTextDeeperThan('["\\\\",[]]', 1)).toBe(true)
    expect(jsonTextDeeperThan('["\\\\\\"[]"]', 1)).toBe(false)
    expect(jsonTextDeeperThan('["\\"[\\\\",[[]]]', 2)).toBe(true)
    // Not JSON: an unterminated string hides the rest of the text, as a parse would refuse it.
    expect(jsonTextDeeperThan('["\\"[[[[', 1)).toBe(false)
  })

  it('counts a quote as escaped exactly when a backslash before it escapes it, on any text', () => {
    // Old definition, one character at a time: inside a string a backslash skips the next one.
    const oracle = (text: string, depth: number) => {
      let open = 0
      let inString = false
      for (let i = 0; i < text.length; i++) {
        const c = text[i]
        if (inString) {
          if (c === '\\') i++
          else if (c === '"') inString = false
        } else if (c === '"') inString = true
        else if (c === '[' || c === '{') {
          if (++open > depth) return true
        } else if (c === ']' || c === '}') open--
      }
      return false
    }
    const texts = fc.string({
      unit: fc.constantFrom('"', '\\', '[', ']', '{', '}', 'a', ','),
      maxLength: 40,
    })
    fc.assert(
      fc.property(texts, fc.integer({ min: 0, max: 4 }), (text, depth) => {
        expect(jsonTextDeeperThan(text, depth)).toBe(oracle(text, depth))
      }),
      { numRuns: 2000 },
    )
  })

  it('agrees with the depth of the parsed value on any JSON text', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 9 }), (value, depth) => {
        const text = JSON.stringify(value)
        expect(jsonTextDeeperThan(text, depth)).toBe(nesting(JSON.parse(text)) > depth)
      }),
    )
  })
})
