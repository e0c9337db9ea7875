import { createHash, createHmac } from 'node:crypto'
import { diffLines } from 'diff'
import { base64 } from '../src/tools/base64.js'
import { hash } from '../src/tools/hash.js'
import { hmac } from '../src/tools/hmac.js'
import { textDiff } from '../src/tools/text-diff/index.js'
import { median, table, timePerCall, us } from './measure.js'
import { type BenchMode, pick } from './mode.js'

/**
 * Tool run time against the raw library it wraps, in one process: hash and hmac against
 * node:crypto, base64 against Buffer, text-diff against jsdiff alone.
 */
export function benchTools(mode: BenchMode): string {
  const kib = (n: number) => 'a1b2c3d4'.repeat(n * 128)
  const rows: (string | number)[][] = []
  const row = (name: string, ours: number, base: number, baseName: string) =>
    rows.push([name, us(ours), `${baseName} ${us(base)}`, `${(ours / base).toFixed(2)}×`])
  const n = pick(mode, { full: 2000, quick: 200, smoke: 20 })
  const diffs = pick(mode, { full: 30, quick: 5, smoke: 1 })

  for (const size of [1, 64]) {
    const input = kib(size)
    row(
      `hash SHA-256, ${size} KiB`,
      timePerCall(() => hash({ input, algorithm: 'SHA-256' }), n),
      timePerCall(() => createHash('sha256').update(input).digest('hex'), n),
      'node:crypto',
    )
  }
  const message = kib(1)
  row(
    'hmac SHA-256, 1 KiB, verify',
    timePerCall(
      () =>
        hmac({
          input: message,
          secret: 'key',
          algorithm: 'SHA-256',
          expected_hex: '00'.repeat(32),
        }),
      n,
    ),
    timePerCall(() => createHmac('sha256', 'key').update(message).digest('hex'), n),
    'node:crypto',
  )
  const text = kib(64)
  const encoded = Buffer.from(text).toString('base64')
  row(
    'base64 decode (strict), 64 KiB',
    timePerCall(() => base64({ mode: 'decode', input: encoded }), n / 10),
    timePerCall(() => Buffer.from(encoded, 'base64').toString('utf8'), n / 10),
    'Buffer',
  )

  const lines = (count: number, tag: string) =>
    Array.from({ length: count }, (_, i) => `${tag} line ${i} ${'x'.repeat(i % 40)}`).join('\n')
  const before = lines(500, 'same')
  const after = before
    .split('\n')
    .map((l, i) => (i % 10 === 0 ? `${l} edited` : l))
    .join('\n')
  row(
    'text-diff, 500 lines, 10% edited',
    timePerCall(() => textDiff({ before, after }), diffs, 5),
    timePerCall(() => diffLines(before, after), diffs, 5),
    'jsdiff',
  )
  // Disjoint sides: jsdiff alone is quadratic here, the pre-filter makes it linear. One call each.
  const size = pick(mode, { full: 2000, quick: 1000, smoke: 200 })
  const left = lines(size, 'left')
  const right = lines(size, 'right')
  const ours = median(
    [0, 1, 2].map(() => timePerCall(() => textDiff({ before: left, after: right }), 1, 1)),
  )
  const base = timePerCall(() => diffLines(left, right), 1, 1)
  row(`text-diff, ${size} vs ${size} disjoint lines`, ours, base, 'jsdiff')

  return table(['case', 'ours (median)', 'baseline (median)', 'ours / baseline'], rows)
}
