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
