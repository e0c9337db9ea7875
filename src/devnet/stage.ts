import type { Address } from '@solana/kit'
import type { Network } from '@x402/core/types'
import type { Chain, Address as EvmAddress } from 'viem'
import { base, baseSepolia } from 'viem/chains'
import { type Eip712Domain, STAGE_NETWORKS, type Stage } from '../payment/networks.js'

export type { Stage } from '../payment/networks.js'

/**
 * What the local chains pose as on a stage (`npm run dev` or `npm run dev -- --testnet`): the EVM
 * chain (its id is anvil's `--chain-id`, so EIP-712 domains match the real network's), the USDC
 * token there with its EIP-712 domain, and the Solana network with its USDC mint. The addresses,
 * names and networks are the service's own ({@link STAGE_NETWORKS}), never a second list.
 */
export interface DevStage {
  stage: Stage
  evm: {
    /** viem chain: Base (8453) or Base Sepolia (84532). */
    chain: Chain
    /** CAIP-2 network, e.g. `eip155:84532`. */
    network: Network
    /** Where the devnet installs Circle's FiatToken. */
    usdc: EvmAddress
    /** The token's EIP-712 domain: `initialize` names the token with `domain.name`. */
    domain: Eip712Domain
  }
  solana: {
    /** CAIP-2 network, e.g. `solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1`. */
    network: Network
    /** Where the devnet creates the USDC mint. */
    usdcMint: Address
  }
}

const CHAINS: Record<Stage, Chain> = { mainnet: base, testnet: baseSepolia }

/**
 * The devnet's view of a stage.
 *
 * @example
 * devStage('testnet').evm.chain.id // 84532
 * devStage('testnet').evm.domain // { name: 'USDC', version: '2' }
 * @throws {Error} if the viem chain's id is not the stage's network (a table out of step)
 */
export function devStage(stage: Stage = 'mainnet'): DevStage {
  const { evm, solana } = STAGE_NETWORKS[stage]
  const chain = CHAINS[stage]
  if (`eip155:${chain.id}` !== evm.network) {
    throw new Error(`viem chain ${chain.id} is not ${evm.network}`)
  }
  return {
    stage,
    evm: { chain, network: evm.network, usdc: evm.usdc as EvmAddress, domain: evm.domain },
    solana: { network: solana.network, usdcMint: solana.usdc as Address },
  }
}
