import type { Money } from '../../telemetry/index.js'

// The page's script (static/landing.js) formats refreshed figures with the same rules; the browser
// test compares both renderings with /stats, so the two cannot drift apart unnoticed.

/** How a figure is displayed. */
export type FigureFormat = 'count' | 'rate' | 'usdc'

/**
 * A whole count with comma thousands separators, independent of the server's locale.
 *
 * @example formatCount(1234567) // '1,234,567'
 */
export function formatCount(value: number): string {
  return String(value).replace(/\B(?=(\d{3})+(?!\d))/g, ',')
}

/**
 * A ratio in [0, 1] as a percentage with one decimal.
 *
 * @example formatRate(1 / 3) // '33.3%'
 */
export function formatRate(value: number): string {
  return `${(value * 100).toFixed(1)}%`
}

/**
 * An amount in USDC, from its exact decimal string (never through a float).
 *
 * @example formatMoney({ atomic: '6000', usdc: '0.006' }) // '0.006 USDC'
 */
export function formatMoney(value: Money): string {
  return `${value.usdc} USDC`
}

/**
 * The time figures were computed, as UTC wall-clock time.
 *
 * @param iso - ISO 8601 time, e.g. `generated_at` of /stats
 * @example formatUpdated('2025-06-15T12:00:05.123Z') // '12:00:05 UTC'
 */
export function formatUpdated(iso: string): string {
  return `${iso.slice(11, 19)} UTC`
}

/**
 * Formats a figure read from /stats.
 *
 * @example formatFigure('rate', 0.5) // '50.0%'
 */
export function formatFigure(format: FigureFormat, value: number | Money): string {
  if (typeof value !== 'number') return formatMoney(value)
  return format === 'rate' ? formatRate(value) : formatCount(value)
}
