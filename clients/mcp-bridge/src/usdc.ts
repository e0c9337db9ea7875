/** USDC has 6 decimals on both rails (Base and Solana). */
export const USDC_DECIMALS = 6

const SCALE = 10n ** BigInt(USDC_DECIMALS)

/**
 * Parses a decimal USDC amount into atomic units, exactly (no floating point on the way).
 *
 * @example
 * parseUsdc('0.01') // 10000n
 * parseUsdc('1')    // 1000000n
 * @param text - digits with an optional dot and at most 6 decimals; no sign, no exponent
 * @returns atomic USDC units (6 decimals)
 * @throws {RangeError} when the text is not such a number
 */
export function parseUsdc(text: string): bigint {
  const match = /^(\d+)(?:\.(\d{1,6}))?$/.exec(text.trim())
  if (!match) {
    throw new RangeError(
      `not a USDC amount: expected digits with at most ${USDC_DECIMALS} decimals, e.g. "0.01"`,
    )
  }
  const [, whole = '0', fraction = ''] = match
  return BigInt(whole) * SCALE + BigInt(fraction.padEnd(USDC_DECIMALS, '0'))
}

/**
 * Parses an atomic amount as x402 carries it (`PaymentRequirements.amount`).
 *
 * @example
 * parseAtomic('1000') // 1000n
 * @returns the amount, or `undefined` when the text is not a non-negative integer
 */
export function parseAtomic(text: unknown): bigint | undefined {
  return typeof text === 'string' && /^\d+$/.test(text) ? BigInt(text) : undefined
}

/**
 * Formats atomic USDC units as a decimal string without trailing zeros.
 *
 * @example
 * formatUsdc(10000n)  // '0.01'
 * formatUsdc(3000n)   // '0.003'
 * formatUsdc(2000000n) // '2'
 */
export function formatUsdc(atomic: bigint): string {
  const sign = atomic < 0n ? '-' : ''
  const abs = atomic < 0n ? -atomic : atomic
  const fraction = (abs % SCALE).toString().padStart(USDC_DECIMALS, '0').replace(/0+$/, '')
  return `${sign}${abs / SCALE}${fraction ? `.${fraction}` : ''}`
}
