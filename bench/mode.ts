/**
 * How long `npm run bench` measures. Every section takes the run's mode and picks its sizes with
 * {@link pick}, so a new section gets the three modes by listing its values.
 *
 * - `full`: the figures bench/README.md records (several minutes)
 * - `quick` (`-- --quick`): shorter, for a look while working
 * - `smoke` (`-- --smoke`): about a second per section, only to prove that each one still runs and
 *   prints its figures; CI runs it after `npm test` so that a bench cannot break silently
 */
export type BenchMode = 'full' | 'quick' | 'smoke'

/**
 * The mode named on the command line: `--smoke`, `--quick`, else `full`.
 *
 * @example benchMode(['node', 'bench/run.ts', '--smoke']) // 'smoke'
 */
export function benchMode(argv: readonly string[] = process.argv): BenchMode {
  if (argv.includes('--smoke')) return 'smoke'
  if (argv.includes('--quick')) return 'quick'
  return 'full'
}

/**
 * The value for `mode`.
 *
 * @example const rounds = pick(mode, { full: 3_000, quick: 500, smoke: 20 })
 */
export function pick<T>(mode: BenchMode, values: Record<BenchMode, T>): T {
  return values[mode]
}

/**
 * Checks a section's output in smoke mode: a Markdown table with a data row holding a number, and
 * no `NaN`, `undefined` or `Infinity` anywhere (a figure that failed to compute).
 *
 * @example assertFigures('tools', '| a | b |\n| --- | --- |\n| hash | 1.2 µs |') // passes
 * @throws {Error} naming the section and what is missing
 */
export function assertFigures(section: string, output: string): void {
  const bad = /\b(NaN|undefined|Infinity)\b/.exec(output)
  if (bad) throw new Error(`bench section "${section}" printed ${bad[1]}`)
  // Data rows: the `|` lines after a table's `| --- |` separator.
  let inTable = false
  let figures = false
  for (const line of output.split('\n')) {
    if (/^\|[\s|:-]+\|$/.test(line)) inTable = true
    else if (!line.startsWith('|')) inTable = false
    else if (inTable && /\d/.test(line)) figures = true
  }
  if (!figures) {
    throw new Error(`bench section "${section}" printed no table of figures`)
  }
}
