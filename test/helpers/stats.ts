/** Milliseconds in a UTC day. */
export const DAY_MS = 86_400_000

/** `Stats.window` as GET /stats documents it, with the default 2-second cache. */
export const WINDOW = {
  last_24h:
    'settled events in the current UTC hour so far and the 23 whole hours before it (exact to the hour)',
  last_7d:
    'settled events in the current UTC hour so far and the 167 whole hours before it (exact to the hour)',
  daily:
    'settled events per UTC calendar day, 7 days oldest first ending today; today runs from 00:00 UTC to now',
  cache_seconds: 2,
}

/** `Stats.channels` when no call was paid through a prepaid channel. */
export const NO_CHANNELS = { calls: 0, revenue: { atomic: '0', usdc: '0' }, share_of_calls: 0 }

/**
 * An atomic USDC amount in both notations of /stats, spelled out independently of the service.
 *
 * @example money(6000n) // { atomic: '6000', usdc: '0.006' }
 */
export function money(atomic: bigint): { atomic: string; usdc: string } {
  const frac = (atomic % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '')
  const usdc = frac ? `${atomic / 1_000_000n}.${frac}` : `${atomic / 1_000_000n}`
  return { atomic: atomic.toString(), usdc }
}

/**
 * The 7-day `daily` series when every settled call happened today (UTC day of `generatedAt`).
 *
 * @param generatedAt - `generated_at` of the /stats body: the instant the figures describe
 * @param calls - settled calls today
 * @param atomic - revenue today in atomic units
 */
export function dailyEndingToday(generatedAt: string, calls: number, atomic: bigint) {
  const today = Math.floor(Date.parse(generatedAt) / DAY_MS)
  return Array.from({ length: 7 }, (_, i) => {
    const day = today - 6 + i
    return {
      date: new Date(day * DAY_MS).toISOString().slice(0, 10),
      calls: day === today ? calls : 0,
      revenue: money(day === today ? atomic : 0n),
    }
  })
}
