import type { AssetAmount, Network } from '@x402/core/types'
import { networkInfo, STAGE_NETWORKS, type Stage, solanaUsdc } from './networks.js'

/** Which chain family a rail settles on. */
export type RailId = 'evm' | 'solana'

/**
 * One payment rail of SPEC section 1: a CAIP-2 network, the USDC asset on it and our payTo.
 *
 * @example
 * { id: 'evm', network: 'eip155:8453', name: 'Base', testnet: false, asset: '0x8335…2913',
 *   payTo: '0xabc…', extra: { name: 'USD Coin', version: '2' } }
 */
export interface Rail {
  id: RailId
  /** CAIP-2 network identifier. */
  network: Network
  /** Display name of the network, e.g. "Base Sepolia" (see `networkInfo`). */
  name: string
  /** True on a test network (faucet USDC, no value): the landing page says so. */
  testnet: boolean
  /** True when the network is simulated on a local devnet (X402_DEVNET): every surface says so. */
  devnet?: true
  /** USDC contract (EVM) or mint (Solana). */
  asset: string
  /** Receiving address. */
  payTo: string
  /** Scheme-specific `extra` we add ourselves (the EIP-712 domain of USDC on EVM). */
  extra: Record<string, unknown>
}

/**
 * Rail settings, as read from config. Every asset, domain and network left undefined takes the
 * stage's value ({@link STAGE_NETWORKS}; the Solana mint that of `solanaNetwork` when the SDK
 * knows it); an explicit one wins.
 */
export interface RailSettings {
  /** `X402_NETWORK`; default `mainnet`. */
  stage?: Stage | undefined
  payToEvm?: string | undefined
  payToSolana?: string | undefined
  /** USDC contract on the EVM rail (EIP-3009). */
  usdcEvm?: string | undefined
  /** EIP-712 domain name of `usdcEvm`; clients sign against it. */
  usdcEvmName?: string | undefined
  /** EIP-712 domain version of `usdcEvm`. */
  usdcEvmVersion?: string | undefined
  usdcSolana?: string | undefined
  solanaNetwork?: string | undefined
  railOrder: readonly RailId[]
  /** X402_DEVNET: the networks are simulated on a local devnet. */
  devnet?: boolean | undefined
}

/**
 * The configured rails in advertising order. A rail without a payTo is left out. The EVM rail is
 * Base on mainnet and Base Sepolia on testnet; its `extra` is the token's EIP-712 domain, which
 * differs between the two ("USD Coin" and "USDC"), so it follows the stage unless set.
 *
 * @example
 * configuredRails({ stage: 'testnet', payToEvm: '0xabc…', railOrder: ['evm'] })[0]
 * // { id: 'evm', network: 'eip155:84532', name: 'Base Sepolia', testnet: true,
 * //   asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', payTo: '0xabc…',
 * //   extra: { name: 'USDC', version: '2' } }
 * @param settings - stage, payTo addresses, assets, Solana network and order
 * @returns the rails, `railOrder` first
 */
export function configuredRails(settings: RailSettings): Rail[] {
  const stage = settings.stage ?? 'mainnet'
  const defaults = STAGE_NETWORKS[stage]
  const solanaNetwork = (settings.solanaNetwork ?? defaults.solana.network) as Network
  const rails: Record<RailId, Rail | undefined> = {
    evm: settings.payToEvm
      ? {
          id: 'evm',
          network: defaults.evm.network,
          ...networkInfo(defaults.evm.network, stage),
          asset: settings.usdcEvm ?? defaults.evm.usdc,
          payTo: settings.payToEvm,
          extra: {
            name: settings.usdcEvmName ?? defaults.evm.domain.name,
            version: settings.usdcEvmVersion ?? defaults.evm.domain.version,
          },
        }
      : undefined,
    solana: settings.payToSolana
      ? {
          id: 'solana',
          network: solanaNetwork,
          ...networkInfo(solanaNetwork, stage),
          // The mint follows the network: an explicit SOLANA_NETWORK gets its own USDC.
          asset: settings.usdcSolana ?? solanaUsdc(solanaNetwork) ?? defaults.solana.usdc,
          payTo: settings.payToSolana,
          extra: {},
        }
      : undefined,
  }
  return settings.railOrder
    .map((id) => rails[id])
    .filter((r): r is Rail => r !== undefined)
    .map((rail) => (settings.devnet ? { ...rail, devnet: true as const } : rail))
}

/**
 * The x402 price of a call on a rail, in atomic units (never a dollar string: the SDK reads a bare
 * string as dollars).
 *
 * @param rail - the rail
 * @param atomicAmount - atomic USDC units, e.g. "1000" for 0.001 USDC
 */
export function priceOn(rail: Rail, atomicAmount: string): AssetAmount {
  return { amount: atomicAmount, asset: rail.asset, extra: { ...rail.extra } }
}
