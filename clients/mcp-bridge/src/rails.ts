import type { Network } from '@x402/core/types'
import { SOLANA_MAINNET_CAIP2 } from '@x402/svm'

/** A payment rail the bridge can pay on: Base or Solana mainnet. */
export type RailId = 'base' | 'solana'

/** CAIP-2 identifier of Base mainnet. */
export const BASE_NETWORK: Network = 'eip155:8453'

/** CAIP-2 identifier of Solana mainnet. */
export const SOLANA_NETWORK: Network = SOLANA_MAINNET_CAIP2 as Network

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
