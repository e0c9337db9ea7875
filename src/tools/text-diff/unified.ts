import { FILE_HEADERS_ONLY, formatPatch, type StructuredPatchHunk } from 'diff'

/** One line of an edit script: kept (' '), removed ('-') or added ('+'). */
export interface EditOp {
  kind: ' ' | '-' | '+'
  /**
   * The line exactly as in its text, without the "\n" that ends it: a CRLF line keeps its "\r",
   * or GNU patch would reject the hunk (context) or write LF where the new text has CRLF.
   */
  text: string
  /** This is the last line of its file(s) and has no trailing newline. */
  noNewline: boolean
}

/** Lines of context around each change, as in `diff -u`. */
export const UNIFIED_CONTEXT = 3

/**
 * Unified diff (`--- before` / `+++ after`, 3 lines of context) of an edit script we already
 * computed. jsdiff's `structuredPatch` would re-diff the texts with plain Myers (no pre-filter,
 * no time budget), so we group our own ops into hunks here and leave the serialisation (hunk
 * headers, the `-0,0` convention, file headers) to jsdiff's `formatPatch`.
 *
 * @example unifiedDiff([{ kind: '-', text: 'a', noNewline: false }, { kind: '+', text: 'b', noNewline: false }])
 * // '--- before\n+++ after\n@@ -1,1 +1,1 @@\n-a\n+b\n'
 * @returns '' when the script has no change
 */
export function unifiedDiff(ops: readonly EditOp[]): string {
  const changed: number[] = []
  ops.forEach((op, index) => {
    if (op.kind !== ' ') changed.push(index)
  })
  if (changed.length === 0) return ''

  // Old/new line numbers (0-based) of the first line at each op index.
  const oldAt: number[] = []
  const newAt: number[] = []
  let oldLine = 0
  let newLine = 0
  for (const op of ops) {
    oldAt.push(oldLine)
    newAt.push(newLine)
    if (op.kind !== '+') oldLine++
    if (op.kind !== '-') newLine++
  }

  const hunks: StructuredPatchHunk[] = []
  let groupStart = changed[0] as number
  let groupEnd = groupStart
  const flush = () => {
    const from = Math.max(0, groupStart - UNIFIED_CONTEXT)
    const to = Math.min(ops.length, groupEnd + 1 + UNIFIED_CONTEXT)
    const lines: string[] = []
    let oldLines = 0
    let newLines = 0
    for (const op of ops.slice(from, to)) {
      lines.push(op.kind + op.text)
      if (op.noNewline) lines.push('\\ No newline at end of file')
      if (op.kind !== '+') oldLines++
      if (op.kind !== '-') newLines++
    }
    hunks.push({
      oldStart: (oldAt[from] as number) + 1,
      oldLines,
      newStart: (newAt[from] as number) + 1,
      newLines,
      lines,
    })
  }
  for (const index of changed.slice(1)) {
    if (index - groupEnd - 1 > 2 * UNIFIED_CONTEXT) {
      flush()
      groupStart = index
    }
    groupEnd = index
  }
  flush()
  return formatPatch(
    {
      oldFileName: 'before',
      newFileName: 'after',
      oldHeader: undefined,
      newHeader: undefined,
      hunks,
    },
    FILE_HEADERS_ONLY,
  )
}
