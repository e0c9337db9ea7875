import { describe, expect, it } from 'vitest'
import { alignLines } from './align.js'

/** Textbook O(N·M) LCS length, as an independent reference. */
function lcsLength(a: string[], b: string[]): number {
  let previous = new Array<number>(b.length + 1).fill(0)
  for (const x of a) {
    const row = [0]
    b.forEach((y, j) => {
      row.push(
        x === y
          ? (previous[j] as number) + 1
          : Math.max(previous[j + 1] as number, row[j] as number),
      )
    })
    previous = row
  }
  return previous[b.length] as number
}

/** mulberry32: a small deterministic PRNG, so the random cases are the same on every run. */
function random(seed: number) {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('alignLines', () => {
  it('matches the common prefix, suffix and middle', () => {
    expect(alignLines(['a', 'b', 'c', 'd'], ['a', 'x', 'c', 'd'], 1000)).toEqual({
      matches: [
        [0, 0],
        [2, 2],
        [3, 3],
      ],
      approximate: false,
    })
    expect(alignLines([], ['a'], 1000)).toEqual({ matches: [], approximate: false })
  })

  it('keeps a minimal alignment: as many matches as the LCS, strictly increasing', () => {
    const next = random(42)
    const alphabet = ['a', 'b', 'c', 'd', 'e', 'only-a', 'only-b']
    let lcsTotal = 0
    for (let round = 0; round < 200; round++) {
      const pick = (exclude: string) => {
        const options = alphabet.filter((s) => s !== exclude)
        return options[Math.floor(next() * options.length)] as string
      }
      const a = Array.from({ length: Math.floor(next() * 30) }, () => pick('only-b'))
      const b = Array.from({ length: Math.floor(next() * 30) }, () => pick('only-a'))
      const { matches, approximate } = alignLines(a, b, 1000)
      expect(approximate).toBe(false)
      lcsTotal += matches.length
      expect(matches.length).toBe(lcsLength(a, b))
      matches.forEach(([i, j], k) => {
        expect(a[i]).toBe(b[j])
        if (k > 0) {
          const [pi, pj] = matches[k - 1] as [number, number]
          expect(i > pi && j > pj).toBe(true)
        }
      })
    }
    // Guard against a degenerate generator: the cases must actually contain matches.
    expect(lcsTotal).toBeGreaterThan(500)
  })

  it('handles 5,000 vs 5,000 completely different lines through the pre-filter', () => {
    const a = Array.from({ length: 5000 }, (_, i) => `before ${i}`)
    const b = Array.from({ length: 5000 }, (_, i) => `after ${i}`)
    expect(alignLines(a, b, 1000)).toEqual({ matches: [], approximate: false })
  })

  it('falls back to a coarse replacement when jsdiff runs out of time', () => {
    const next = random(7)
    const a: string[] = Array.from({ length: 3000 }, () => (next() < 0.5 ? 'x' : 'y'))
    const b: string[] = Array.from({ length: 3000 }, () => (next() < 0.5 ? 'x' : 'y'))
    a[0] = 'same'
    b[0] = 'same'
    a[2999] = 'end of a'
    b[2999] = 'end of b'
    const { matches, approximate } = alignLines(a, b, 0)
    expect(approximate).toBe(true)
    expect(matches).toEqual([[0, 0]])
  })
})
