import type { Network } from '@x402/core/types'

// Protocol constants, written here rather than imported: the root entry points of @x402/evm and
// @x402/svm cost about a second of start-up between them (every scheme they ship), and a wallet
// with one key needs neither of the other rail's modules. rails.test.ts pins each value to the
// SDKs' own tables.

/** A payment rail the bridge can pay on: Base or Solana mainnet. */
export type RailId = 'base' | 'solana'

/** CAIP-2 identifier of Base mainnet. */
export const BASE_NETWORK: Network = 'eip155:8453'

/** CAIP-2 identifier of Solana mainnet. */
export const SOLANA_NETWORK: Network = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

/** The public Solana mainnet RPC, the SVM client's own default. */
export const SOLANA_MAINNET_RPC_URL = 'https://api.mainnet-beta.solana.com'

/** The USDC of each rail: Circle's USDC contract on Base, the USDC mint on Solana (6 decimals). */
export const RAIL_USDC: Record<RailId, string> = {
  base: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  solana: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
}

/**
 * Whether `asset` is the USDC of `rail` (EVM addresses compare without case, as checksums vary).
 *
 * @example
 * isUsdc('base', '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913') // true
 */
export function isUsdc(rail: RailId, asset: string): boolean {
  return rail === 'base'
    ? asset.toLowerCase() === RAIL_USDC.base.toLowerCase()
    : asset === RAIL_USDC.solana
}

/** The CAIP-2 network of each rail. */
export const RAIL_NETWORK: Record<RailId, Network> = { base: BASE_NETWORK, solana: SOLANA_NETWORK }

/** Human names of the rails, for messages. */
export const RAIL_LABEL: Record<RailId, string> = { base: 'Base', solana: 'Solana' }

/**
 * The rail of a CAIP-2 network, or `undefined` for any other network.
 *
 * @example
 * railOf('eip155:8453') // 'base'
 */
export function railOf(network: string): RailId | undefined {
  if (network === BASE_NETWORK) return 'base'
  if (network === SOLANA_NETWORK) return 'solana'
  return undefined
}
