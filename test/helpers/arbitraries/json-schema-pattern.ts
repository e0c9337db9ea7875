// Test-only (excluded from the build).
import fc from 'fast-check'

// Random regular expressions for json-validate's `pattern` and `patternProperties`.
//
// In this branch tools still run on the main thread, without a time budget, so a pattern that
// backtracks catastrophically would stall the whole test process instead of failing one call.
// The grammar below therefore cannot produce one: quantifiers apply to single atoms only (never to
// a group, so no nested quantifiers and no quantified alternation of overlapping branches), there
// are no backreferences or lookarounds, and at most three quantifiers per pattern. The strings
// they run against are short (the fuzzers keep them under 64 characters), so even the polynomial
// worst case of adjacent overlapping quantifiers (a*a*a*) stays far below a millisecond.
// The fuzz process also sets V8's --enable-experimental-regexp-engine-on-excessive-backtracks
// (test/helpers/fuzz/regexp-engine.ts), as production will; but on Node 20 (V8 11.3) that fallback engine does
// not take patterns compiled with the `u` flag, which is how @cfworker/json-schema compiles every
// `pattern` and `patternProperties` key, so the grammar is the real protection here.

const LITERALS = ['a', 'b', 'x', '0', '1', '-', '_', ' ', 'é', '\u{1F600}', '/', '~']
const ESCAPED = [
  '\\.',
  '\\*',
  '\\+',
  '\\?',
  '\\(',
  '\\)',
  '\\[',
  '\\]',
  '\\{',
  '\\}',
  '\\|',
  '\\^',
  '\\$',
  '\\\\',
  '\\/',
]
const CLASSES = [
  '.',
  '\\d',
  '\\D',
  '\\w',
  '\\W',
  '\\s',
  '\\S',
  '[a-z]',
  '[^0-9]',
  '[ab]',
  '[_\\-.]',
  '\\p{L}',
  '\\p{Lu}',
  '[\\u{1F600}-\\u{1F64F}]',
]
const QUANTIFIERS = ['?', '*', '+', '{2}', '{0,3}', '{1,}', '*?', '+?']

const atom = fc.oneof(
  fc.constantFrom(...LITERALS),
  fc.constantFrom(...ESCAPED),
  fc.constantFrom(...CLASSES),
)

/** An atom and maybe a quantifier; {@link render} drops quantifiers past the third. */
const term = fc.tuple(atom, fc.option(fc.constantFrom(...QUANTIFIERS), { freq: 2 }))

const sequence = fc.array(term, { minLength: 0, maxLength: 5 })

function render(terms: Array<[string, string | null]>, quantifierBudget: { left: number }): string {
  return terms
    .map(([a, q]) => {
      if (q === null || quantifierBudget.left === 0) return a
      quantifierBudget.left--
      return a + q
    })
    .join('')
}

/**
 * Patterns valid under the `u` flag (as @cfworker/json-schema compiles them) that cannot backtrack
 * catastrophically: optional anchors, one level of unquantified groups and alternation.
 *
 * @example fc.sample(safePattern, 1) // e.g. ['^(?:a\\d{0,3}|[a-z]+)x?$']
 */
export const safePattern: fc.Arbitrary<string> = fc
  .tuple(
    fc.boolean(),
    fc.array(sequence, { minLength: 1, maxLength: 3 }),
    fc.constantFrom('', '(', '(?:'),
    sequence,
    fc.boolean(),
  )
  .map(([start, alternatives, group, tail, end]) => {
    const budget = { left: 3 }
    const alternation = alternatives.map((seq) => render(seq, budget)).join('|')
    const body = group === '' ? alternation : `${group}${alternation})`
    return `${start ? '^' : ''}${body}${render(tail, budget)}${end ? '$' : ''}`
  })

/** Patterns that are not valid ECMAScript regular expressions under the `u` flag. */
export const invalidPattern: fc.Arbitrary<string> = fc.constantFrom(
  '(',
  ')',
  '[',
  'a{2,1}',
  '\\',
  '*',
  '+a',
  '(?<',
  '\\k<x>',
  '\\p{Nope}',
  '[z-a]',
  '\\u{110000}',
  '\\c',
  '(?<n>a)(?<n>b)',
)
