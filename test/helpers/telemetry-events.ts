import { createHash } from 'node:crypto'
import type { EventRow, Outcome } from '../../src/telemetry/types.js'
import { uuidV7 } from '../../src/telemetry/uuid-v7.js'

/** The two rails' CAIP-2 networks. */
export const NETWORKS = ['eip155:8453', 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'] as const

/** The eight tool ids of the catalogue. */
export const TOOLS = [
  'hash',
  'base64',
  'hmac',
  'json-validate',
  'jwt-inspect',
  'text-diff',
  'pipeline',
  'payload-inspect',
] as const

const MINUTE = 60_000
const HOUR = 3_600_000

/** Options of {@link syntheticAttempts}. */
export interface SyntheticOptions {
  /** Paid attempts; each is a `verified` event plus its final outcome (two rows). */
  attempts: number
  /**
   * Epoch ms to place events before. Times are `now - h hours - m minutes` with h in
   * `[minHoursAgo, maxHoursAgo]` and m in `[0, 29]`: with `now` at half past an hour, every event sits in the
   * same window whether windows are exact to the millisecond (version 1) or to the hour.
   */
  now: number
  maxHoursAgo: number
  /** Nearest hour before `now` to place events in; default 1. */
  minHoursAgo?: number
  /** Distinct payer keys; payers are drawn with a skew, so some repeat and some pay once. */
  payers: number
  /** The payer keys to draw from, when a caller makes many batches over one pool. */
  payerKeys?: readonly string[]
  /** PRNG seed; the same seed gives the same events (ids aside). */
  seed?: number
  /**
   * Share of the Base attempts paid by a voucher of a prepaid channel (scheme
   * `batch-settlement`), in [0, 1]; default 0 (none, and the same events as before the option).
   */
  vouchers?: number
}

/** mulberry32: a small seeded PRNG, enough for test data. */
function prng(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
  }
}

/** A payer key as the service stores it: 64 hex characters (here a hash of the index). */
export function syntheticPayerKey(index: number): string {
  return createHash('sha256').update(`synthetic-payer-${index}`).digest('hex')
}

/**
 * Synthetic payment events as the payment gate records them: per attempt a `verified` event and
 * then `settled` (80%), `settle_failed` (10%) or `tool_failed_unsettled` (10%), on both rails,
 * every tool and both transports. 1 settled call in 50 has no payer.
 *
 * @example
 * syntheticAttempts({ attempts: 100, now: Date.UTC(2025, 5, 15, 12, 30), maxHoursAgo: 240, payers: 20 })
 * // 200 EventRows
 */
export function syntheticAttempts(options: SyntheticOptions): EventRow[] {
  const random = prng(options.seed ?? 1)
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)] as T
  const keys =
    options.payerKeys ?? Array.from({ length: options.payers }, (_, i) => syntheticPayerKey(i))
  const rows: EventRow[] = []
  for (let i = 0; i < options.attempts; i++) {
    const min = options.minHoursAgo ?? 1
    const h = min + Math.floor(random() * (options.maxHoursAgo - min + 1))
    const at = options.now - h * HOUR - Math.floor(random() * 30) * MINUTE
    // Squaring skews towards the first payers: a few pay often, many pay once or twice.
    const payerKey =
      random() < 0.02 ? null : (keys[Math.floor(random() ** 2 * keys.length)] ?? null)
    const roll = random()
    const outcome: Outcome =
      roll < 0.8 ? 'settled' : roll < 0.9 ? 'settle_failed' : 'tool_failed_unsettled'
    const base: Omit<EventRow, 'id' | 'outcome'> = {
      at,
      tool: pick(TOOLS),
      transport: random() < 0.7 ? 'http' : 'mcp',
      network: pick(NETWORKS),
      amount: pick(['1000', '1000', '1000', '3000', '2500']),
      payerKey,
    }
    // Drawn only when asked, so that callers without vouchers keep the same sequence.
    if (options.vouchers !== undefined && base.network === NETWORKS[0]) {
      if (random() < options.vouchers) base.scheme = 'batch-settlement'
    }
    // Ids as toEventRow makes them: version 7, in the order the events are written.
    rows.push({ ...base, id: uuidV7(), outcome: 'verified' })
    rows.push({ ...base, id: uuidV7(), outcome })
  }
  return rows
}
