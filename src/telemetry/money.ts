import type { Money } from './types.js'

/** USDC has 6 decimals on Base and Solana. */
const USDC_DECIMALS = 6
const SCALE = 10n ** BigInt(USDC_DECIMALS)

/**
 * Formats atomic USDC units as an exact decimal string, with no floating point on the way.
 *
 * @example
 * formatUsdc(3000n) // '0.003'
 * formatUsdc(1_500_000n) // '1.5'
 * formatUsdc(0n) // '0'
 * @param atomic - non-negative amount in atomic units
 * @returns whole units, then up to 6 decimals with trailing zeros trimmed
 */
export function formatUsdc(atomic: bigint): string {
  const sign = atomic < 0n ? '-' : ''
  const abs = atomic < 0n ? -atomic : atomic
  const whole = abs / SCALE
  const fraction = (abs % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '')
  return fraction ? `${sign}${whole}.${fraction}` : `${sign}${whole}`
}

/**
 * Both notations of an atomic amount.
 *
 * @example
 * money(3000n) // { atomic: '3000', usdc: '0.003' }
 */
export function money(atomic: bigint): Money {
  return { atomic: atomic.toString(), usdc: formatUsdc(atomic) }
}

/**
 * Reads a database integer (bigint from better-sqlite3 with safe integers, string from pg for
 * int8/numeric, number otherwise) as a bigint without passing through a double.
 *
 * @throws {TypeError} when the value is not an integer in any of those forms
 */
export function toBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value
  if (typeof value === 'number' && Number.isSafeInteger(value)) return BigInt(value)
  if (typeof value === 'string' && /^-?\d+$/.test(value)) return BigInt(value)
  if (value === null || value === undefined) return 0n
  throw new TypeError(`not an integer: ${typeof value}`)
}

/** Reads a database count as a number; counts stay far below 2^53. */
export function toCount(value: unknown): number {
  return Number(toBigInt(value))
}
