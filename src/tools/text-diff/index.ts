import { z } from 'zod'
import { utf8Text } from '../fields.js'
import { KiB } from '../limits.js'
import type { ToolDefinition } from '../types.js'
import { wellFormedFields } from '../unicode.js'
import { alignLines } from './align.js'
import { type EditOp, unifiedDiff } from './unified.js'

/** Largest side: 256 KiB of UTF-8. */
export const MAX_DIFF_BYTES = 256 * KiB

/** Most lines per side. */
export const MAX_DIFF_LINES = 10_000

/** Time budget for jsdiff after the pre-filter; beyond it the result is `approximate`. */
export const DIFF_TIMEOUT_MS = 1000

/**
 * Number of lines of a text as the diff sees them: a final line without newline counts, an
 * empty text has none.
 *
 * @example countLines('a\nb') // 2
 */
export function countLines(text: string): number {
  let count = 0
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) count++
  return text.length > 0 && !text.endsWith('\n') ? count + 1 : count
}

function side(description: string) {
  return utf8Text({ maxBytes: MAX_DIFF_BYTES, description })
    .refine((text) => countLines(text) <= MAX_DIFF_LINES, {
      message: `must have at most ${MAX_DIFF_LINES} lines`,
    })
    .default('')
}

/** Request body of POST /text-diff (SPEC 2.2). */
export const textDiffInput = z
  .object({
    before: side('Original text. CRLF line endings are normalised to LF before diffing.'),
    after: side('Updated text. CRLF line endings are normalised to LF before diffing.'),
  })
  .strict()

/** Parsed text-diff request (defaults applied). */
export type TextDiffInput = z.output<typeof textDiffInput>

const lineNumber = z.number().int().min(1)
const diffLine = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('unchanged'),
    old_line: lineNumber,
    new_line: lineNumber,
    text: z.string(),
  }),
  z.object({ type: z.literal('removed'), old_line: lineNumber, text: z.string() }),
  z.object({ type: z.literal('added'), new_line: lineNumber, text: z.string() }),
  z.object({
    type: z.literal('modified'),
    old_line: lineNumber,
    new_line: lineNumber,
    before: z.string(),
    after: z.string(),
  }),
])
const lineEndings = z.enum(['lf', 'crlf', 'mixed', 'none'])

/** `result` of a text-diff call. */
export const textDiffOutput = z.object({
  identical: z.boolean().describe('Whether the texts are equal after CRLF normalisation.'),
  approximate: z
    .boolean()
    .describe('True when the diff hit its time budget and part of it is a coarse replacement.'),
  summary: z.object({
    added: z.number().int().min(0),
    removed: z.number().int().min(0),
    modified: z.number().int().min(0),
    unchanged: z.number().int().min(0),
  }),
  lines: z
    .array(diffLine)
    .describe(
      'Every line in order; a removed run followed by an added run is paired line by line as modified.',
    ),
  unified: z
    .string()
    .describe(
      'Unified diff (--- before, +++ after, 3 lines of context) of the exact texts: lines keep their own endings, so GNU patch turns before into after byte for byte; "" when they are equal byte for byte.',
    ),
  line_endings: z.object({ before: lineEndings, after: lineEndings }),
  no_newline_at_eof: z.object({ before: z.boolean(), after: z.boolean() }),
})

/** Result of {@link textDiff}. */
export type TextDiffResult = z.output<typeof textDiffOutput>
type DiffLine = TextDiffResult['lines'][number]

interface Side {
  /** The lines without their line ending (CRLF normalised to LF): what `lines` reports. */
  lines: string[]
  /**
   * The lines as in the text without their "\n": a CRLF line keeps its "\r". What `unified`
   * holds, so that GNU patch reproduces the exact bytes.
   */
  raw: string[]
  /** Comparison keys: the line, except a final line without newline, which never equals one with. */
  keys: string[]
  endings: z.output<typeof lineEndings>
  noNewlineAtEof: boolean
}

function readSide(text: string): Side {
  if (text === '') return { lines: [], raw: [], keys: [], endings: 'none', noNewlineAtEof: false }
  const raw = text.split('\n')
  const noNewlineAtEof = !text.endsWith('\n')
  if (!noNewlineAtEof) raw.pop()
  let crlf = 0
  let lf = 0
  // Every line but an unterminated last one ended in "\n"; a "\r" right before it makes a CRLF.
  const terminated = noNewlineAtEof ? raw.length - 1 : raw.length
  const lines = raw.map((line, k) => {
    if (k === terminated) return line
    if (line.endsWith('\r')) {
      crlf++
      return line.slice(0, -1)
    }
    lf++
    return line
  })
  const endings = crlf > 0 && lf > 0 ? 'mixed' : crlf > 0 ? 'crlf' : lf > 0 ? 'lf' : 'none'
  const keys = [...lines]
  // Lines never contain "\n", so this key cannot collide with any complete line.
  if (noNewlineAtEof) keys[keys.length - 1] = `\n${lines[lines.length - 1]}`
  return { lines, raw, keys, endings, noNewlineAtEof }
}

/** The shape check of textDiff (see `ToolDefinition.check`): well-formed Unicode in before, after. */
export const checkTextDiff = wellFormedFields<TextDiffInput>('before', 'after')

/**
 * Line diff of `before` and `after` (CRLF normalised to LF), classifying each line as added,
 * removed, modified (a removed run paired with the added run right after it) or unchanged, plus a
 * unified diff. A last line that differs only in its trailing newline counts as changed, as in
 * GNU diff. The unified diff follows the same alignment but keeps every line's own ending, so
 * that GNU patch applied to `before` gives `after` byte for byte (a pair that only differs in CRLF
 * versus LF is unchanged in `lines` and a removal plus an addition there).
 *
 * @example textDiff({ before: 'a\nb\n', after: 'a\nc\n' }).summary
 * // { added: 0, removed: 0, modified: 1, unchanged: 1 }
 * @throws {ToolError} `invalid_unicode`
 */
export function textDiff(input: TextDiffInput): TextDiffResult {
  checkTextDiff(input)
  const a = readSide(input.before)
  const b = readSide(input.after)
  const { matches, approximate } = alignLines(a.keys, b.keys, DIFF_TIMEOUT_MS)

  // The edit script of the unified diff, over the exact lines (`raw`): a pair that matches only
  // after CRLF normalisation is a change there, or GNU patch would keep the old line ending.
  // Removals and additions are buffered up to the next kept line, so that each change reads as
  // its "-" lines followed by its "+" lines.
  const ops: EditOp[] = []
  const removals: EditOp[] = []
  const additions: EditOp[] = []
  const lastA = a.lines.length - 1
  const lastB = b.lines.length - 1
  const remove = (k: number) =>
    removals.push({
      kind: '-',
      text: a.raw[k] as string,
      noNewline: a.noNewlineAtEof && k === lastA,
    })
  const add = (k: number) =>
    additions.push({
      kind: '+',
      text: b.raw[k] as string,
      noNewline: b.noNewlineAtEof && k === lastB,
    })
  const flush = () => {
    ops.push(...removals, ...additions)
    removals.length = 0
    additions.length = 0
  }

  const lines: DiffLine[] = []
  const summary = { added: 0, removed: 0, modified: 0, unchanged: 0 }
  let i = 0
  let j = 0
  for (const [mi, mj] of [...matches, [a.lines.length, b.lines.length] as const]) {
    for (let k = i; k < mi; k++) remove(k)
    for (let k = j; k < mj; k++) add(k)
    const pairs = Math.min(mi - i, mj - j)
    for (let p = 0; p < pairs; p++) {
      lines.push({
        type: 'modified',
        old_line: i + p + 1,
        new_line: j + p + 1,
        before: a.lines[i + p] as string,
        after: b.lines[j + p] as string,
      })
    }
    for (let k = i + pairs; k < mi; k++) {
      lines.push({ type: 'removed', old_line: k + 1, text: a.lines[k] as string })
    }
    for (let k = j + pairs; k < mj; k++) {
      lines.push({ type: 'added', new_line: k + 1, text: b.lines[k] as string })
    }
    summary.modified += pairs
    summary.removed += mi - i - pairs
    summary.added += mj - j - pairs
    if (mi < a.lines.length) {
      const text = a.lines[mi] as string
      if (a.raw[mi] === b.raw[mj]) {
        flush()
        ops.push({
          kind: ' ',
          text: a.raw[mi] as string,
          noNewline: a.noNewlineAtEof && mi === lastA,
        })
      } else {
        remove(mi)
        add(mj)
      }
      lines.push({ type: 'unchanged', old_line: mi + 1, new_line: mj + 1, text })
      summary.unchanged++
    }
    i = mi + 1
    j = mj + 1
  }
  flush()

  return {
    identical: summary.unchanged === a.lines.length && summary.unchanged === b.lines.length,
    approximate,
    summary,
    lines,
    unified: unifiedDiff(ops),
    line_endings: { before: a.endings, after: b.endings },
    no_newline_at_eof: { before: a.noNewlineAtEof, after: b.noNewlineAtEof },
  }
}

/** Catalogue entry (SPEC 4.1: POST /text-diff, payload_text_diff, 0.001 USDC). */
export const textDiffTool: ToolDefinition<TextDiffInput, TextDiffResult> = {
  id: 'text-diff',
  path: '/text-diff',
  mcpName: 'payload_text_diff',
  operationId: 'text_diff',
  price: '1000',
  title: 'Text diff',
  description:
    'Line-by-line diff of two texts: each line added, removed, modified or unchanged, a summary, a unified diff, and line-ending and final-newline differences.',
  input: textDiffInput,
  output: textDiffOutput,
  examples: [
    {
      before: 'alpha\nbeta\ngamma\ndelta\n',
      after: 'alpha\nBETA\ngamma\ndelta\nepsilon\n',
    },
    { before: 'same\r\n', after: 'same\n' },
  ],
  limits: [
    `before, after: each at most ${MAX_DIFF_BYTES / KiB} KiB of UTF-8 and ${MAX_DIFF_LINES} lines; well-formed Unicode`,
    `diff time budget: ${DIFF_TIMEOUT_MS} ms after pre-filtering, then approximate`,
  ],
  check: checkTextDiff,
  run: (input) => textDiff(input),
}
