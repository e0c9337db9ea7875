/** Milliseconds in one hour; rollups are kept per UTC hour, `floor(at / HOUR_MS)`. */
export const HOUR_MS = 3_600_000

/** Milliseconds in one day; the daily series is per UTC calendar day. */
export const DAY_MS = 86_400_000

/** Hourly buckets in the 24-hour window (the current hour and the 23 before it). */
export const DAY_WINDOW_HOURS = 24

/** Hourly buckets in the 7-day window (the current hour and the 167 before it). */
export const WEEK_WINDOW_HOURS = 168

/**
 * The time windows of one GET /stats answer, all derived from one `now`. Hours are UTC hour
 * numbers, `floor(epoch ms / HOUR_MS)`; every range is inclusive at both ends.
 *
 * The windows are exact to the hour, not the millisecond: the 24-hour window is the current hour
 * so far plus the 23 whole hours before it (between 23 and 24 hours of events), the 7-day window
 * the current hour plus the 167 before it. The daily series and both windows are sums of the same
 * hourly rows, so they always agree.
 */
export interface Windows {
  /** Epoch milliseconds the figures describe. */
  now: number
  /** The current UTC hour, `floor(now / HOUR_MS)`: the last hour of every window. */
  hour: number
  /** First hour of the 7-day window, `hour - 167`; the earliest hour any figure reads. */
  weekFirstHour: number
  /** First hour of the 24-hour window, `hour - 23`. */
  dayFirstHour: number
  /** First hour of the daily series: 00:00 UTC six days before today. */
  dailyFirstHour: number
}

/**
 * Derives every window bound from one `now`.
 *
 * @example
 * windowsAt(Date.UTC(2025, 5, 15, 12, 30))
 * // { now, hour: 486108, weekFirstHour: 485941, dayFirstHour: 486085, dailyFirstHour: 485952 }
 * @param now - epoch milliseconds
 */
export function windowsAt(now: number): Windows {
  const hour = Math.floor(now / HOUR_MS)
  const today = Math.floor(now / DAY_MS)
  return {
    now,
    hour,
    weekFirstHour: hour - (WEEK_WINDOW_HOURS - 1),
    dayFirstHour: hour - (DAY_WINDOW_HOURS - 1),
    dailyFirstHour: (today - 6) * (DAY_MS / HOUR_MS),
  }
}
