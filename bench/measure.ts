/**
 * Timing helpers for `npm run bench`. Machines are shared and noisy, so every figure is a median
 * over rounds, and every tool is reported as a ratio to a baseline measured in the same run.
 */

/** Median of a list of numbers. */
export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2
}

/**
 * Median time of one call of `fn`, in microseconds: `rounds` rounds of `iterations` calls each,
 * after one warm-up round.
 */
export function timePerCall(fn: () => unknown, iterations: number, rounds = 7): number {
  for (let i = 0; i < iterations; i++) fn()
  const perRound: number[] = []
  for (let r = 0; r < rounds; r++) {
    const t0 = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) fn()
    perRound.push(Number(process.hrtime.bigint() - t0) / 1000 / iterations)
  }
  return median(perRound)
}

/** Formats microseconds for a table. */
export function us(value: number): string {
  return value >= 1000 ? `${(value / 1000).toFixed(2)} ms` : `${value.toFixed(1)} µs`
}

/** A Markdown table. */
export function table(head: string[], rows: (string | number)[][]): string {
  const line = (cells: (string | number)[]) => `| ${cells.join(' | ')} |`
  return [line(head), line(head.map(() => '---')), ...rows.map(line)].join('\n')
}

/** The ratios ours / peer of one figure over interleaved rounds (see {@link roundRatios}). */
export interface RoundRatios {
  /** Median of the rounds' ratios; undefined when no round has one. */
  median?: number
  /** The table cell: `median (rounds min to max)`, or why there is no ratio. */
  cell: string
}

/**
 * Per-round ratios ours / peer of one figure (round i of `ours` against round i of `peer`), their
 * median and range, as the peer section prints them. A round whose peer figure is 0 (a latency
 * under autocannon's resolution of a whole millisecond) has no ratio rather than NaN or Infinity.
 *
 * @example roundRatios([2, 6], [1, 2]).cell // '2.50 (rounds 2.00 to 3.00)'
 * @example roundRatios([0, 1], [0, 0]).cell // "n/a (the peer's figure is 0 in every round)"
 */
export function roundRatios(ours: number[], peer: number[]): RoundRatios {
  const ratios = ours.flatMap((value, i) => {
    const base = peer[i] ?? 0
    return base > 0 ? [value / base] : []
  })
  if (ratios.length === 0) return { cell: "n/a (the peer's figure is 0 in every round)" }
  const fixed = (v: number) => v.toFixed(2)
  const m = median(ratios)
  const skipped =
    ratios.length < ours.length
      ? `; ${ratios.length} of ${ours.length} rounds, the peer's figure being 0 in the others`
      : ''
  return {
    median: m,
    cell: `${fixed(m)} (rounds ${fixed(Math.min(...ratios))} to ${fixed(Math.max(...ratios))}${skipped})`,
  }
}
