import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../../test/helpers/tools.js'
import { countLines, MAX_DIFF_LINES, textDiff, textDiffInput } from './index.js'

describe('textDiff', () => {
  it('classifies lines and pairs a removed run with the added run after it', () => {
    expect(textDiff({ before: 'a\nb\nc\nd\n', after: 'a\nB\nc\nd\ne\n' })).toEqual({
      identical: false,
      approximate: false,
      summary: { added: 1, removed: 0, modified: 1, unchanged: 3 },
      lines: [
        { type: 'unchanged', old_line: 1, new_line: 1, text: 'a' },
        { type: 'modified', old_line: 2, new_line: 2, before: 'b', after: 'B' },
        { type: 'unchanged', old_line: 3, new_line: 3, text: 'c' },
        { type: 'unchanged', old_line: 4, new_line: 4, text: 'd' },
        { type: 'added', new_line: 5, text: 'e' },
      ],
      unified: '--- before\n+++ after\n@@ -1,4 +1,5 @@\n a\n-b\n+B\n c\n d\n+e\n',
      line_endings: { before: 'lf', after: 'lf' },
      no_newline_at_eof: { before: false, after: false },
    })
  })

  it('keeps the excess of a longer removed run as removed', () => {
    const result = textDiff({ before: 'k\nx1\nx2\nx3\nk2\n', after: 'k\ny1\nk2\n' })
    expect(result.summary).toEqual({ added: 0, removed: 2, modified: 1, unchanged: 2 })
    expect(result.lines).toEqual([
      { type: 'unchanged', old_line: 1, new_line: 1, text: 'k' },
      { type: 'modified', old_line: 2, new_line: 2, before: 'x1', after: 'y1' },
      { type: 'removed', old_line: 3, text: 'x2' },
      { type: 'removed', old_line: 4, text: 'x3' },
      { type: 'unchanged', old_line: 5, new_line: 3, text: 'k2' },
    ])
    expect(result.unified).toBe(
      '--- before\n+++ after\n@@ -1,5 +1,3 @@\n k\n-x1\n-x2\n-x3\n+y1\n k2\n',
    )
  })

  it('does not pair an added run with a later removed run', () => {
    const result = textDiff({ before: 'a\nb\n', after: 'n\na\n' })
    expect(result.lines).toEqual([
      { type: 'added', new_line: 1, text: 'n' },
      { type: 'unchanged', old_line: 1, new_line: 2, text: 'a' },
      { type: 'removed', old_line: 2, text: 'b' },
    ])
  })

  it('handles empty sides', () => {
    expect(textDiff({ before: '', after: '' })).toEqual({
      identical: true,
      approximate: false,
      summary: { added: 0, removed: 0, modified: 0, unchanged: 0 },
      lines: [],
      unified: '',
      line_endings: { before: 'none', after: 'none' },
      no_newline_at_eof: { before: false, after: false },
    })
    const added = textDiff({ before: '', after: 'x\ny\n' })
    expect(added.summary).toEqual({ added: 2, removed: 0, modified: 0, unchanged: 0 })
    expect(added.unified).toBe('--- before\n+++ after\n@@ -0,0 +1,2 @@\n+x\n+y\n')
  })

  it('normalises CRLF before diffing and reports line endings', () => {
    const result = textDiff({ before: 'a\r\nb\r\n', after: 'a\nb\n' })
    expect(result).toMatchObject({
      identical: true,
      summary: { added: 0, removed: 0, modified: 0, unchanged: 2 },
      line_endings: { before: 'crlf', after: 'lf' },
    })
    // The unified diff is a patch of the exact bytes: the endings changed, so the lines did.
    expect(result.unified).toBe('--- before\n+++ after\n@@ -1,2 +1,2 @@\n-a\r\n-b\r\n+a\n+b\n')
    expect(textDiff({ before: 'a\r\nb\n', after: 'a' }).line_endings).toEqual({
      before: 'mixed',
      after: 'none',
    })
    // A lone CR is not a line break; it stays part of the line.
    expect(textDiff({ before: 'a\rb', after: 'a\rb' }).lines).toEqual([
      { type: 'unchanged', old_line: 1, new_line: 1, text: 'a\rb' },
    ])
  })

  it('treats a final line that only gains a newline as changed, like GNU diff', () => {
    const result = textDiff({ before: 'a\nb', after: 'a\nb\n' })
    expect(result.identical).toBe(false)
    expect(result.no_newline_at_eof).toEqual({ before: true, after: false })
    expect(result.lines[1]).toEqual({
      type: 'modified',
      old_line: 2,
      new_line: 2,
      before: 'b',
      after: 'b',
    })
    expect(result.unified).toBe(
      '--- before\n+++ after\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+b\n',
    )
    expect(textDiff({ before: 'x\nb', after: 'y\nb' }).unified).toBe(
      '--- before\n+++ after\n@@ -1,2 +1,2 @@\n-x\n+y\n b\n\\ No newline at end of file\n',
    )
  })

  it('finishes 5,000 vs 5,000 completely different lines exactly', () => {
    const before = Array.from({ length: 5000 }, (_, i) => `old line ${i}\n`).join('')
    const after = Array.from({ length: 5000 }, (_, i) => `new line ${i}\n`).join('')
    const result = textDiff({ before, after })
    expect(result.approximate).toBe(false)
    expect(result.summary).toEqual({ added: 0, removed: 0, modified: 5000, unchanged: 0 })
    expect(
      result.unified.startsWith('--- before\n+++ after\n@@ -1,5000 +1,5000 @@\n-old line 0\n'),
    ).toBe(true)
  })

  it('rejects lone surrogates', () => {
    expect(toolErrorOf(() => textDiff({ before: 'ok', after: '\uDC00' })).details).toEqual({
      field: 'after',
      offset: 0,
    })
  })
})

describe('textDiffInput', () => {
  it('defaults both sides and rejects unknown keys', () => {
    expect(textDiffInput.parse({})).toEqual({ before: '', after: '' })
    expect(textDiffInput.safeParse({ before: 'a', context: 3 }).success).toBe(false)
  })

  it(`caps each side at ${MAX_DIFF_LINES} lines and 256 KiB`, () => {
    expect(countLines('a\nb')).toBe(2)
    expect(countLines('a\nb\n')).toBe(2)
    expect(countLines('')).toBe(0)
    expect(textDiffInput.safeParse({ before: '\n'.repeat(MAX_DIFF_LINES) }).success).toBe(true)
    expect(textDiffInput.safeParse({ before: '\n'.repeat(MAX_DIFF_LINES + 1) }).success).toBe(false)
    expect(textDiffInput.safeParse({ after: 'x'.repeat(256 * 1024 + 1) }).success).toBe(false)
  })
})
