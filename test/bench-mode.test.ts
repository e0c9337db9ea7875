import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { roundRatios } from '../bench/measure.js'
import { assertFigures, benchMode, pick } from '../bench/mode.js'

// bench/mode.ts: `npm run bench -- --smoke` runs every section briefly and checks its figures;
// .ci/run runs it after `npm test` so that a bench cannot break silently (issue 19).

describe('bench modes', () => {
  it('reads the mode from the command line', () => {
    expect(benchMode(['node', 'bench/run.ts'])).toBe('full')
    expect(benchMode(['node', 'bench/run.ts', '--quick'])).toBe('quick')
    expect(benchMode(['node', 'bench/run.ts', '--smoke'])).toBe('smoke')
    expect(pick('smoke', { full: 3_000, quick: 500, smoke: 20 })).toBe(20)
  })

  it('accepts a section that printed a table of figures', () => {
    expect(() =>
      assertFigures('tools', '| case | time |\n| --- | --- |\n| hash | 5.5 µs |'),
    ).not.toThrow()
  })

  it.each([
    ['no table', 'nothing measured', 'printed no table of figures'],
    ['a header only', '| case | p50 |\n| --- | --- |', 'printed no table of figures'],
    ['a row without a number', '| case | time |\n| --- | --- |\n| hash | – |', 'printed no table'],
    ['NaN', '| case | time |\n| --- | --- |\n| hash | NaN ms |', 'printed NaN'],
    ['undefined', '| a | b |\n| --- | --- |\n| 1 | undefined |', 'printed undefined'],
  ])('refuses a section that printed %s', (_case, output, message) => {
    expect(() => assertFigures('tools', output)).toThrow(`bench section "tools" ${message}`)
  })

  it('runs in CI after npm test', () => {
    const ci = readFileSync(new URL('../.ci/run', import.meta.url), 'utf8')
    expect(ci.indexOf('npm run bench -- --smoke')).toBeGreaterThan(ci.indexOf('npm test\n'))
  })

  it("gives the peer section's ratios per round, never NaN or Infinity when the peer's figure is 0", () => {
    expect(roundRatios([2, 6, 3], [1, 2, 2])).toEqual({
      median: 2,
      cell: '2.00 (rounds 1.50 to 3.00)',
    })
    // A smoke run on an idle machine: both p50 latencies of the unpaid 402 were 0 ms (CI, 26 Nov).
    expect(roundRatios([0], [0])).toEqual({ cell: "n/a (the peer's figure is 0 in every round)" })
    expect(roundRatios([5, 1], [0, 2])).toEqual({
      median: 0.5,
      cell: "0.50 (rounds 0.50 to 0.50; 1 of 2 rounds, the peer's figure being 0 in the others)",
    })
    expect(() =>
      assertFigures(
        'peer',
        `| a | b |\n| --- | --- |\n| p50 | 0 ms | ${roundRatios([0], [0]).cell} |`,
      ),
    ).not.toThrow()
  })
})
