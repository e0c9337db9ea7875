import { DAY_MS } from './aggregate-sql.js'
import { money } from './money.js'
import type { Aggregates, DailyPoint, Stats, Windows } from './types.js'

/** Plain-language window definitions published in `Stats.window`. */
export const WINDOW_TEXT = {
  last_24h: 'settled events with time in (now-24h, now]',
  last_7d: 'settled events with time in (now-7d, now]',
  daily:
    'settled events per UTC calendar day, 7 days oldest first ending today; today runs from 00:00 UTC to now',
} as const

/**
 * Shapes the raw backend aggregates into the GET /stats body.
 *
 * @param a - aggregates computed by a backend for `w`
 * @param w - the window bounds the aggregates were computed for
 * @param cacheSeconds - how long the figures may be served from cache, published in `window`
 */
export function buildStats(a: Aggregates, w: Windows, cacheSeconds: number): Stats {
  const repeatPaidCalls = a.settledWithPayer - a.uniquePayers
  const byDay = new Map(a.daily.map((d) => [d.day, d]))
  const firstDay = Math.round(w.dailyStart / DAY_MS)
  const daily: DailyPoint[] = []
  for (let day = firstDay; day < firstDay + 7; day++) {
    const found = byDay.get(day)
    daily.push({
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      calls: found?.calls ?? 0,
      revenue: money(found?.atomic ?? 0n),
    })
  }
  return {
    paid_calls: a.verified,
    successful_paid_calls: a.settled,
    unique_payers: a.uniquePayers,
    repeat_payers: a.repeatPayers,
    repeat_paid_calls: repeatPaidCalls,
    repeat_call_rate: a.settled === 0 ? 0 : repeatPaidCalls / a.settled,
    revenue: {
      lifetime: money(a.revenueLifetime),
      last_24h: money(a.revenue24h),
      last_7d: money(a.revenue7d),
    },
    networks: Object.fromEntries(
      a.networks.map((n) => [n.network, { calls: n.calls, revenue: money(n.atomic) }]),
    ),
    tools: Object.fromEntries(a.tools.map((t) => [t.tool, { calls: t.calls }])),
    daily,
    generated_at: new Date(w.now).toISOString(),
    window: { ...WINDOW_TEXT, cache_seconds: cacheSeconds },
  }
}
