import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff'
import { describe, expect, it } from 'vitest'
import { type EditOp, unifiedDiff } from './unified.js'

const op = (kind: EditOp['kind'], text: string, noNewline = false): EditOp => ({
  kind,
  text,
  noNewline,
})

function jsdiff(before: string, after: string): string {
  return createTwoFilesPatch('before', 'after', before, after, undefined, undefined, {
    context: 3,
    headerOptions: FILE_HEADERS_ONLY,
  }) as string
}

describe('unifiedDiff', () => {
  it('returns "" without changes', () => {
    expect(unifiedDiff([op(' ', 'a')])).toBe('')
    expect(unifiedDiff([])).toBe('')
  })

  it('formats hunks exactly like jsdiff for the same edit script', () => {
    const lines = Array.from({ length: 20 }, (_, i) => `line ${i + 1}`)
    const before = `${lines.join('\n')}\n`
    const changed = [...lines]
    changed[1] = 'LINE 2'
    changed[17] = 'LINE 18'
    const after = `${changed.join('\n')}\n`
    const ops: EditOp[] = []
    lines.forEach((line, i) => {
      if (line === changed[i]) ops.push(op(' ', line))
      else ops.push(op('-', line), op('+', changed[i] as string))
    })
    const expected = jsdiff(before, after)
    expect(unifiedDiff(ops)).toBe(expected)
    expect(expected).toContain('@@ -1,5 +1,5 @@')
    expect(expected).toContain('@@ -15,6 +15,6 @@')
  })

  it('merges changes separated by at most 6 unchanged lines into one hunk', () => {
    const ops = [op('-', 'a'), ...'123456'.split('').map((t) => op(' ', t)), op('+', 'b')]
    expect(unifiedDiff(ops)).toBe(
      '--- before\n+++ after\n@@ -1,7 +1,7 @@\n-a\n 1\n 2\n 3\n 4\n 5\n 6\n+b\n',
    )
  })

  it('uses the -0,0 convention for an empty side', () => {
    expect(unifiedDiff([op('+', 'x'), op('+', 'y')])).toBe(
      '--- before\n+++ after\n@@ -0,0 +1,2 @@\n+x\n+y\n',
    )
    expect(unifiedDiff([op('+', 'x')])).toBe(jsdiff('', 'x\n'))
  })

  it('marks a missing final newline after the line that lacks it', () => {
    expect(unifiedDiff([op(' ', 'a'), op('-', 'b', true), op('+', 'b')])).toBe(
      jsdiff('a\nb', 'a\nb\n'),
    )
    expect(unifiedDiff([op('-', 'a'), op('+', 'c'), op(' ', 'z', true)])).toBe(
      jsdiff('a\nz', 'c\nz'),
    )
  })
})
