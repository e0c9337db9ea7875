import { diffArrays } from 'diff'

/** Result of {@link alignLines}. */
export interface LineAlignment {
  /** Matched (unchanged) line pairs as [index in a, index in b], increasing in both. */
  matches: Array<[number, number]>
  /** True when jsdiff ran out of time and the middle was treated as one replacement. */
  approximate: boolean
}

/**
 * Longest-common-subsequence alignment of two line arrays with jsdiff's Myers diff, behind a
 * GNU-diff-style pre-filter. Myers costs O((N+M)·D), which is seconds for 5,000 vs 5,000
 * completely different lines; but lines occurring on one side only can never match, so (like GNU
 * diff's discard_confusing_lines) we set them aside, together with the common prefix and suffix,
 * and diff only what could match. Removing never-matching items does not change the LCS, so the
 * result stays minimal. If jsdiff still exceeds `timeoutMs`, the remaining middle becomes a plain
 * replacement and `approximate` is set.
 *
 * @example alignLines(['a', 'b', 'c'], ['a', 'x', 'c'], 1000)
 * // { matches: [[0, 0], [2, 2]], approximate: false }
 */
export function alignLines(
  a: readonly string[],
  b: readonly string[],
  timeoutMs: number,
): LineAlignment {
  let prefix = 0
  while (prefix < a.length && prefix < b.length && a[prefix] === b[prefix]) prefix++
  let suffix = 0
  while (
    suffix < a.length - prefix &&
    suffix < b.length - prefix &&
    a[a.length - 1 - suffix] === b[b.length - 1 - suffix]
  ) {
    suffix++
  }
  const matches: Array<[number, number]> = []
  for (let i = 0; i < prefix; i++) matches.push([i, i])

  const aEnd = a.length - suffix
  const bEnd = b.length - suffix
  const inA = new Set(a.slice(prefix, aEnd))
  const inB = new Set(b.slice(prefix, bEnd))
  const aKept: number[] = []
  for (let i = prefix; i < aEnd; i++) if (inB.has(a[i] as string)) aKept.push(i)
  const bKept: number[] = []
  for (let j = prefix; j < bEnd; j++) if (inA.has(b[j] as string)) bKept.push(j)

  let approximate = false
  if (aKept.length > 0 && bKept.length > 0) {
    const changes = diffArrays(
      aKept.map((i) => a[i] as string),
      bKept.map((j) => b[j] as string),
      { timeout: timeoutMs },
    )
    if (changes === undefined) {
      approximate = true
    } else {
      let ai = 0
      let bi = 0
      for (const change of changes) {
        const count = change.count
        if (change.added) bi += count
        else if (change.removed) ai += count
        else {
          for (let k = 0; k < count; k++) {
            matches.push([aKept[ai + k] as number, bKept[bi + k] as number])
          }
          ai += count
          bi += count
        }
      }
    }
  }
  for (let k = suffix; k > 0; k--) matches.push([a.length - k, b.length - k])
  return { matches, approximate }
}
