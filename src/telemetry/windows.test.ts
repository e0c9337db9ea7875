import { describe, expect, it } from 'vitest'
import { HOUR_MS, windowsAt } from './windows.js'

const hourOf = (ms: number) => ms / HOUR_MS

describe('windowsAt', () => {
  it('derives every bound from one now, in UTC hours', () => {
    const now = Date.UTC(2025, 5, 15, 12, 30)
    expect(windowsAt(now)).toEqual({
      now,
      hour: hourOf(Date.UTC(2025, 5, 15, 12)),
      weekFirstHour: hourOf(Date.UTC(2025, 5, 8, 13)),
      dayFirstHour: hourOf(Date.UTC(2025, 5, 14, 13)),
      dailyFirstHour: hourOf(Date.UTC(2025, 5, 9)),
    })
  })

  it('spans 24 and 168 hours, current hour included', () => {
    const w = windowsAt(Date.UTC(2025, 0, 1, 0, 0, 0, 1))
    expect(w.hour - w.dayFirstHour + 1).toBe(24)
    expect(w.hour - w.weekFirstHour + 1).toBe(168)
  })

  it('starts the daily series six days before today at midnight, inside the 7-day window', () => {
    expect(windowsAt(Date.UTC(2025, 0, 1)).dailyFirstHour).toBe(hourOf(Date.UTC(2024, 11, 26)))
    expect(windowsAt(Date.UTC(2025, 0, 1) - 1).dailyFirstHour).toBe(hourOf(Date.UTC(2024, 11, 25)))
    for (const hour of [0, 1, 12, 23]) {
      const w = windowsAt(Date.UTC(2025, 0, 1, hour, 59))
      expect(w.dailyFirstHour).toBeGreaterThanOrEqual(w.weekFirstHour)
    }
  })
})
