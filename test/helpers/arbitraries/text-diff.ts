// Test-only (excluded from the build): pairs of texts for the text-diff fuzzers and the GNU patch
// property.
import fc from 'fast-check'

/** Lines that look like diff syntax, plus plain, blank, Unicode and lone-CR lines. */
const SPECIAL_LINES = [
  'a',
  'b',
  'c',
  '',
  ' ',
  '-',
  '+',
  '-a',
  '+a',
  '--',
  '--- before',
  '+++ after',
  '@@',
  '@@ -1,1 +1,1 @@',
  '\\',
  '\\ No newline at end of file',
  'x\ry',
  'tail\r',
  '\t',
  'é',
  '\u{1F600}',
  'e\u0301',
]

const line = fc.oneof(
  { arbitrary: fc.constantFrom(...SPECIAL_LINES), weight: 3 },
  {
    arbitrary: fc.string({ unit: 'grapheme', maxLength: 6 }).map((s) => s.replace(/\n/g, '')),
    weight: 1,
  },
)

/** A line and the ending that follows it. */
type Line = [text: string, ending: '\n' | '\r\n']

const lines = fc.array(fc.tuple(line, fc.constantFrom<'\n' | '\r\n'>('\n', '\r\n')), {
  maxLength: 14,
})

/** A text's lines in one ending style (LF, CRLF, or each line its own), with or without a final newline. */
const styled = fc
  .tuple(lines, fc.constantFrom('lf', 'crlf', 'mixed'), fc.boolean())
  .map(([ls, style, finalNewline]) => ({
    lines: ls.map(([t, e]): Line => [t, style === 'lf' ? '\n' : style === 'crlf' ? '\r\n' : e]),
    finalNewline,
  }))

function render(ls: readonly Line[], finalNewline: boolean): string {
  const out = ls.map(([t, e]) => t + e).join('')
  if (finalNewline || ls.length === 0) return out
  const [, last] = ls[ls.length - 1] as Line
  return out.slice(0, -last.length)
}

const edit = fc.record({
  op: fc.constantFrom('delete', 'insert', 'replace', 'ending'),
  at: fc.nat(),
  line,
  ending: fc.constantFrom<'\n' | '\r\n'>('\n', '\r\n'),
})

/**
 * `before` and `after` texts: `after` mostly an edit of `before` (deleted, inserted and replaced
 * lines, changed line endings, a final newline added or dropped), sometimes unrelated, equal, or
 * empty. CRLF, LF and mixed endings; lines that start with "-", "+", "@@" or "\"; Unicode.
 */
export const diffTexts: fc.Arbitrary<{ before: string; after: string }> = fc.oneof(
  {
    arbitrary: fc
      .tuple(styled, fc.array(edit, { maxLength: 6 }), fc.boolean())
      .map(([base, edits, finalNewline]) => {
        const next = [...base.lines]
        for (const { op, at, line: text, ending } of edits) {
          const i = at % (next.length + 1)
          if (op === 'insert') next.splice(i, 0, [text, ending])
          else if (i === next.length) continue
          else if (op === 'delete') next.splice(i, 1)
          else if (op === 'replace') next[i] = [text, (next[i] as Line)[1]]
          else next[i] = [(next[i] as Line)[0], ending]
        }
        return { before: render(base.lines, base.finalNewline), after: render(next, finalNewline) }
      }),
    weight: 6,
  },
  {
    arbitrary: fc.tuple(styled, styled).map(([x, y]) => ({
      before: render(x.lines, x.finalNewline),
      after: render(y.lines, y.finalNewline),
    })),
    weight: 2,
  },
  {
    arbitrary: styled
      .map((x) => render(x.lines, x.finalNewline))
      .map((t) => ({ before: t, after: t })),
    weight: 1,
  },
  {
    arbitrary: fc.tuple(styled, fc.boolean()).map(([x, first]) => {
      const t = render(x.lines, x.finalNewline)
      return first ? { before: '', after: t } : { before: t, after: '' }
    }),
    weight: 1,
  },
)

/** Valid request bodies of POST /text-diff; either side may be omitted (it defaults to ""). */
export const validInputs = diffTexts.chain(({ before, after }) =>
  fc.constantFrom<Record<string, string>>({ before, after }, { before }, { after }),
)
