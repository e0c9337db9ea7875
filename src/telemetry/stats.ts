import { money } from './money.js'
import type { DailyPoint, Rollups, Scheme, Stats } from './types.js'
import { DAY_MS, HOUR_MS, type Windows } from './windows.js'

/** Plain-language window definitions published in `Stats.window`. */
export const WINDOW_TEXT = {
  last_24h:
    'settled events in the current UTC hour so far and the 23 whole hours before it (exact to the hour)',
  last_7d:
    'settled events in the current UTC hour so far and the 167 whole hours before it (exact to the hour)',
  daily:
    'settled events per UTC calendar day, 7 days oldest first ending today; today runs from 00:00 UTC to now',
} as const

/** The scheme of a prepaid channel's vouchers: what `Stats.channels` counts. */
const CHANNEL_SCHEME: Scheme = 'batch-settlement'

/**
 * Shapes the rollups into the GET /stats body. The windows and the daily series are sums over
 * the same hourly rows, so they agree with each other by construction.
 *
 * @param r - rollups read by a backend for `w`
 * @param w - the windows the rollups were read for
 * @param cacheSeconds - how long the figures may be served from cache, published in `window`
 */
export function buildStats(r: Rollups, w: Windows, cacheSeconds: number): Stats {
  const settled = r.outcomes.settled ?? { calls: 0, atomic: 0n }
  const channels = r.schemes.find((s) => s.scheme === CHANNEL_SCHEME) ?? { calls: 0, atomic: 0n }
  const repeatPaidCalls = r.settledWithPayer - r.uniquePayers
  let last24h = 0n
  let last7d = 0n
  const hoursPerDay = DAY_MS / HOUR_MS
  const perDay = new Map<number, { calls: number; atomic: bigint }>()
  for (const h of r.hours) {
    if (h.hour < w.weekFirstHour || h.hour > w.hour) continue
    last7d += h.atomic
    if (h.hour >= w.dayFirstHour) last24h += h.atomic
    if (h.hour < w.dailyFirstHour) continue
    const day = Math.floor(h.hour / hoursPerDay)
    const found = perDay.get(day) ?? { calls: 0, atomic: 0n }
    found.calls += h.calls
    found.atomic += h.atomic
    perDay.set(day, found)
  }
  const firstDay = w.dailyFirstHour / hoursPerDay
  const daily: DailyPoint[] = []
  for (let day = firstDay; day < firstDay + 7; day++) {
    const found = perDay.get(day)
    daily.push({
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      calls: found?.calls ?? 0,
      revenue: money(found?.atomic ?? 0n),
    })
  }
  return {
    paid_calls: r.outcomes.verified?.calls ?? 0,
    successful_paid_calls: settled.calls,
    unique_payers: r.uniquePayers,
    repeat_payers: r.repeatPayers,
    repeat_paid_calls: repeatPaidCalls,
    repeat_call_rate: settled.calls === 0 ? 0 : repeatPaidCalls / settled.calls,
    revenue: {
      lifetime: money(settled.atomic),
      last_24h: money(last24h),
      last_7d: money(last7d),
    },
    networks: Object.fromEntries(
      r.networks.map((n) => [n.network, { calls: n.calls, revenue: money(n.atomic) }]),
    ),
    tools: Object.fromEntries(r.tools.map((t) => [t.tool, { calls: t.calls }])),
    channels: {
      calls: channels.calls,
      revenue: money(channels.atomic),
      share_of_calls: settled.calls === 0 ? 0 : channels.calls / settled.calls,
    },
    daily,
    generated_at: new Date(w.now).toISOString(),
    window: { ...WINDOW_TEXT, cache_seconds: cacheSeconds },
  }
}
