import { afterEach, describe, expect, it } from 'vitest'
import { installLinearUnicodeRegExp, sameWithoutUnicodeFlag } from './linear-regexp.js'

const Native = RegExp

/** Deterministic pseudo-random numbers (mulberry32). */
function random(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

describe('sameWithoutUnicodeFlag', () => {
  it.each([
    '^(a+)+$',
    '^[a-z0-9_.-]+@[a-z]+\\.com$',
    '(?<year>\\d{4})-(?:\\d\\d)',
    '\\bfoo\\b|^$',
    '^[\\s\\w\\-\\]]*$',
    'a{2,3}?[\\b]',
  ])('accepts %s', (source) => {
    expect(sameWithoutUnicodeFlag(source)).toBe(true)
  })

  it.each([
    ['^.+$', '`.` matches a code point with u, a code unit without'],
    ['[^a]', 'a negated class matches half a surrogate pair without u'],
    ['\\S', 'so does \\S'],
    ['[\\W]', 'and \\W, inside a class too'],
    ['\\B', '\\B holds between the halves of a pair'],
    ['\\u{1F600}', '\\u{…} means "u" repeated without u'],
    ['\\p{L}', 'property escapes need u'],
    ['é', 'non-ASCII'],
    ['😀+', 'an astral literal repeats its last code unit without u'],
    ['(?=a)b', 'lookahead: the linear engine refuses it anyway'],
    ['(?<!a)b', 'lookbehind'],
    ['(a)\\1', 'backreference'],
    ['\\x41', 'hex escapes are left out'],
    ['a\\', 'a trailing backslash'],
  ])('refuses %s (%s)', (source) => {
    expect(sameWithoutUnicodeFlag(source)).toBe(false)
  })

  it('is right to refuse: `.` and `[^…]` answer differently on an astral character', () => {
    expect(new Native('^.$', 'u').test('😀')).toBe(true)
    expect(new Native('^.$').test('😀')).toBe(false)
    expect(new Native('^[^a]$', 'u').test('😀')).toBe(true)
    expect(new Native('^[^a]$').test('😀')).toBe(false)
  })

  it('accepts only patterns that match the same strings with and without u (20,000 random cases)', () => {
    const next = random(9)
    const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T
    const atoms = [
      'a',
      'b',
      '-',
      '\\d',
      '\\s',
      '\\w',
      '[ab]',
      '[a-c\\d]',
      '[\\s-]',
      '\\.',
      'é',
      '.',
    ]
    const atoms2 = [...atoms, '[^a]', '\\S', '\\W', '\\D', '😀']
    const quantifiers = ['', '', '*', '+', '?', '{1,2}', '*?', '+?']
    const assertions = ['', '^', '\\b', '\\B']
    const ends = ['', '$', '\\b']
    const pattern = (depth: number): string => {
      let out = pick(assertions)
      const length = 1 + Math.floor(next() * 4)
      for (let i = 0; i < length; i++) {
        const atom =
          depth > 0 && next() < 0.25
            ? `(${next() < 0.5 ? '?:' : ''}${pattern(depth - 1)}${next() < 0.3 ? `|${pattern(depth - 1)}` : ''})`
            : pick(atoms2)
        out += atom + pick(quantifiers)
      }
      return out + pick(ends)
    }
    const alphabet = ['a', 'b', '-', ' ', '1', '_', '.', 'é', '😀', '\n', '\u00a0']
    const text = () => Array.from({ length: Math.floor(next() * 6) }, () => pick(alphabet)).join('')
    let accepted = 0
    for (let i = 0; i < 2000; i++) {
      const source = pattern(2)
      let unicode: RegExp
      try {
        unicode = new Native(source, 'u')
      } catch {
        continue
      }
      if (!sameWithoutUnicodeFlag(source)) continue
      accepted++
      const plain = new Native(source)
      for (let j = 0; j < 10; j++) {
        const s = text()
        expect(plain.test(s), `${source} on ${JSON.stringify(s)}`).toBe(unicode.test(s))
      }
    }
    expect(accepted).toBeGreaterThan(200)
  })
})

describe('installLinearUnicodeRegExp', () => {
  afterEach(() => {
    globalThis.RegExp = Native
  })

  it('compiles an equivalent u pattern without u, and leaves everything else native', () => {
    installLinearUnicodeRegExp()
    expect(RegExp).not.toBe(Native)
    // Sources in variables: the point is the constructor, not literals (which it never sees).
    const redos = '^(a+)+$'
    const dot = '^.+$'
    expect(new RegExp(redos, 'u').flags).toBe('')
    expect(RegExp(redos, 'u').flags).toBe('')
    expect(new RegExp(redos, 'mu').flags).toBe('m')
    expect(new RegExp(dot, 'u').flags).toBe('u')
    expect(new RegExp(redos, 'gu').flags).toBe('gu')
    expect(new RegExp(redos).flags).toBe('')
    expect(new RegExp(redos, 'u')).toBeInstanceOf(Native)
    expect(/x/ instanceof RegExp).toBe(true)
    class Sub extends RegExp {}
    expect(new Sub(redos, 'u').flags).toBe('u')
    expect(RegExp.prototype).toBe(Native.prototype)
  })

  it('throws the SyntaxError the u flag gives', () => {
    installLinearUnicodeRegExp()
    // Valid without u (a literal "{"), invalid with it; built at run time so tsc does not check it.
    const source = ['a', '{'].join('')
    expect(() => new Native(source)).not.toThrow()
    expect(() => new RegExp(source, 'u')).toThrow(
      new SyntaxError('Invalid regular expression: /a{/u: Incomplete quantifier'),
    )
  })
})
