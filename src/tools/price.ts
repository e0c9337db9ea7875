/**
 * Formats atomic USDC units (6 decimals) as a decimal string: how a tool's price is said to people
 * (the payment gate's 402 message, every published document).
 *
 * @example
 * usdcDecimal('1000') // '0.001'
 * usdcDecimal('3000000') // '3'
 */
export function usdcDecimal(atomic: string | bigint): string {
  const v = BigInt(atomic)
  const whole = v / 1_000_000n
  const frac = (v % 1_000_000n).toString().padStart(6, '0').replace(/0+$/, '')
  return frac ? `${whole}.${frac}` : `${whole}`
}
