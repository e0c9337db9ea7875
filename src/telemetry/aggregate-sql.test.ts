import { describe, expect, it } from 'vitest'
import { aggregateSql, toPositional, windowsAt } from './aggregate-sql.js'

describe('windowsAt', () => {
  it('derives every bound from one now', () => {
    const now = Date.UTC(2025, 5, 15, 12, 30)
    expect(windowsAt(now)).toEqual({
      now,
      dayAgo: Date.UTC(2025, 5, 14, 12, 30),
      weekAgo: Date.UTC(2025, 5, 8, 12, 30),
      dailyStart: Date.UTC(2025, 5, 9),
    })
  })

  it('starts the daily series six days before today at midnight, even at midnight', () => {
    expect(windowsAt(Date.UTC(2025, 0, 1)).dailyStart).toBe(Date.UTC(2024, 11, 26))
    expect(windowsAt(Date.UTC(2025, 0, 1) - 1).dailyStart).toBe(Date.UTC(2024, 11, 25))
  })
})

describe('toPositional', () => {
  const w = { now: 30, dayAgo: 20, weekAgo: 10, dailyStart: 5 }

  it('numbers each name once, in order of first use', () => {
    expect(toPositional('at > @dayAgo AND at <= @now OR at > @weekAgo AND at <= @now', w)).toEqual({
      text: 'at > $1::bigint AND at <= $2::bigint OR at > $3::bigint AND at <= $2::bigint',
      values: ['20', '30', '10'],
    })
  })

  it('binds exactly the names each aggregate query uses', () => {
    const sql = aggregateSql()
    expect(toPositional(sql.revenue, w).values).toEqual(['20', '30', '10'])
    expect(toPositional(sql.daily, w).values).toEqual(['5', '30'])
    expect(toPositional(sql.networks, w).values).toEqual([])
  })
})
