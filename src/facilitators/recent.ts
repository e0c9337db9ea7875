/** Counts of a facilitator's recent calls, as `/health` shows them. */
export interface RecentCounts {
  /** Length of the window, in seconds. */
  windowSeconds: number
  /** Calls that ended in the window. */
  calls: number
  /** Of those, the ones that failed (timeouts included). */
  failures: number
  /** Of the failures, the ones that timed out. */
  timeouts: number
}

/** Outcomes of recent calls in a sliding window, in constant memory. */
export interface RecentOutcomes {
  /** Records one call's outcome now. */
  record(outcome: 'ok' | 'failed' | 'timeout'): void
  /** The counts over the window ending now. */
  counts(): RecentCounts
}

/** Options of {@link createRecentOutcomes}. */
export interface RecentOutcomesOptions {
  /** Length of the window, in milliseconds (default 5 minutes). */
  windowMs?: number
  /** Buckets the window is cut into (default 10): the counts move in steps of windowMs / buckets. */
  buckets?: number
  now?: () => number
}

/** Default window of {@link createRecentOutcomes}: 5 minutes, in milliseconds. */
export const RECENT_WINDOW_MS = 5 * 60_000

/**
 * Counts calls, failures and timeouts over the last `windowMs`, in fixed time buckets, so that
 * memory and cost stay constant whatever the traffic (a list of the last N calls would forget a
 * failure within a second at high rates, and keep it for hours at low ones).
 *
 * @example
 * const recent = createRecentOutcomes()
 * recent.record('timeout')
 * recent.counts() // { windowSeconds: 300, calls: 1, failures: 1, timeouts: 1 }
 */
export function createRecentOutcomes(options: RecentOutcomesOptions = {}): RecentOutcomes {
  const windowMs = options.windowMs ?? RECENT_WINDOW_MS
  const size = options.buckets ?? 10
  const bucketMs = windowMs / size
  const now = options.now ?? Date.now
  const buckets = Array.from({ length: size }, () => ({
    slot: -1,
    calls: 0,
    failed: 0,
    timeouts: 0,
  }))

  function bucket(slot: number) {
    const b = buckets[slot % size] as (typeof buckets)[number]
    if (b.slot !== slot) Object.assign(b, { slot, calls: 0, failed: 0, timeouts: 0 })
    return b
  }

  return {
    record(outcome) {
      const b = bucket(Math.floor(now() / bucketMs))
      b.calls++
      if (outcome !== 'ok') b.failed++
      if (outcome === 'timeout') b.timeouts++
    },
    counts() {
      const current = Math.floor(now() / bucketMs)
      let calls = 0
      let failures = 0
      let timeouts = 0
      for (const b of buckets) {
        if (b.slot > current - size && b.slot <= current) {
          calls += b.calls
          failures += b.failed
          timeouts += b.timeouts
        }
      }
      return { windowSeconds: Math.round(windowMs / 1000), calls, failures, timeouts }
    },
  }
}
