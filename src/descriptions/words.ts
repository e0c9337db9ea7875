// How the published documents say amounts and networks.

export { usdcDecimal } from '../tools/price.js'

/** What every surface says of a local devnet (X402_DEVNET). */
export const DEVNET_WORDS =
  'simulated on a local devnet, for trying the service: its USDC has no value, no real money moves'

/**
 * The networks of some rails in words, for the prose of the discovery documents: "Base and
 * Solana", "Base Sepolia or Solana devnet (test networks: faucet USDC, no value)", "Base and
 * Solana devnet (Solana devnet is a test network: faucet USDC, no value)".
 *
 * @param rails - the rails, in advertising order
 * @param joiner - "and" or "or"
 * @example
 * networksInWords([{ network: 'eip155:8453', name: 'Base', testnet: false }], 'or') // 'Base'
 */
export function networksInWords(
  rails: readonly { name: string; testnet: boolean; devnet?: true }[],
  joiner: 'and' | 'or',
): string {
  if (rails.length === 0) return 'no network yet'
  const names = rails.map((r) => r.name)
  const listed =
    names.length === 1
      ? (names[0] as string)
      : `${names.slice(0, -1).join(', ')} ${joiner} ${names.at(-1)}`
  if (rails.some((r) => r.devnet)) return `${listed} (${DEVNET_WORDS})`
  const tests = rails.filter((r) => r.testnet)
  if (tests.length === 0) return listed
  if (tests.length === rails.length) {
    return `${listed} (${tests.length === 1 ? 'a test network' : 'test networks'}: faucet USDC, no value)`
  }
  const which = tests.map((r) => r.name).join(' and ')
  return `${listed} (${which} ${tests.length === 1 ? 'is a test network' : 'are test networks'}: faucet USDC, no value)`
}
