import type { Network } from '@x402/core/types'
import { getDefaultAsset } from '@x402/evm'
import {
  getDefaultAsset as getDefaultSvmAsset,
  SOLANA_DEVNET_CAIP2,
  SOLANA_MAINNET_CAIP2,
  SOLANA_TESTNET_CAIP2,
} from '@x402/svm'

/**
 * Where the service takes payments (`X402_NETWORK`): `mainnet` is real USDC on Base and Solana;
 * `testnet` is faucet USDC on Base Sepolia and Solana devnet, for the stage before mainnet.
 */
export type Stage = 'mainnet' | 'testnet'

/** The stages, in the order the docs list them. */
export const STAGES: readonly Stage[] = ['mainnet', 'testnet']

/** The EIP-712 domain an EIP-3009 authorization is signed against (PaymentRequirements `extra`). */
export interface Eip712Domain {
  name: string
  version: string
}

/** USDC on one stage: the EVM and Solana networks, tokens and the EVM token's EIP-712 domain. */
export interface StageNetworks {
  evm: { network: Network; usdc: string; domain: Eip712Domain }
  solana: { network: Network; usdc: string }
}

/**
 * The EVM USDC of a network, from the SDK's default asset table (`@x402/evm`): the address and
 * the EIP-712 domain its `ExactEvmScheme` would put in `extra` itself. Taken from there rather
 * than copied, so a correction in the SDK reaches us.
 */
function evmUsdc(network: Network): StageNetworks['evm'] {
  const asset = getDefaultAsset(network)
  return { network, usdc: asset.asset, domain: { name: asset.name, version: asset.version } }
}

/**
 * The USDC mint of a Solana network from the SDK's default asset table (`@x402/svm`), or
 * undefined for a network the SDK does not know.
 *
 * @example
 * solanaUsdc('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1') // '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU'
 */
export function solanaUsdc(network: string): string | undefined {
  try {
    return getDefaultSvmAsset(network as Network).asset
  } catch {
    // getDefaultAsset throws for a network it has no asset for.
    return undefined
  }
}

function solanaStage(network: Network): StageNetworks['solana'] {
  const usdc = solanaUsdc(network)
  if (!usdc) throw new Error(`@x402/svm has no USDC for ${network}`)
  return { network, usdc }
}

/**
 * USDC per stage. `mainnet`: Base `eip155:8453` (0x8335…2913, EIP-712 "USD Coin" version "2") and
 * Solana mainnet (mint EPjF…Dt1v). `testnet`: Base Sepolia `eip155:84532` (0x036C…CF7e, EIP-712
 * "USDC" version "2": Circle named the Sepolia token differently, so a payment signed with the
 * mainnet name does not verify there) and Solana devnet (mint 4zMM…DncDU). Addresses and CAIP-2
 * identifiers come from the SDK (`@x402/evm` default assets, `@x402/svm` constants).
 */
export const STAGE_NETWORKS: Readonly<Record<Stage, StageNetworks>> = {
  mainnet: {
    evm: evmUsdc('eip155:8453'),
    solana: solanaStage(SOLANA_MAINNET_CAIP2),
  },
  testnet: {
    evm: evmUsdc('eip155:84532'),
    solana: solanaStage(SOLANA_DEVNET_CAIP2),
  },
}

/** What people call a network, and whether its money is play money. */
export interface NetworkInfo {
  /** Display name, e.g. "Base Sepolia". */
  name: string
  /** True on a test network (faucet tokens, no value). */
  testnet: boolean
}

const KNOWN: Readonly<Record<string, NetworkInfo>> = {
  'eip155:8453': { name: 'Base', testnet: false },
  'eip155:84532': { name: 'Base Sepolia', testnet: true },
  [SOLANA_MAINNET_CAIP2]: { name: 'Solana', testnet: false },
  [SOLANA_DEVNET_CAIP2]: { name: 'Solana devnet', testnet: true },
  [SOLANA_TESTNET_CAIP2]: { name: 'Solana testnet', testnet: true },
}

/**
 * The display name of a CAIP-2 network and whether it is a test network. A network we do not
 * know (a `SOLANA_NETWORK` of the operator's choosing) is named by its identifier and counts as a
 * test network only on the testnet stage.
 *
 * @example
 * networkInfo('eip155:84532') // { name: 'Base Sepolia', testnet: true }
 * networkInfo('solana:abc…', 'mainnet') // { name: 'solana:abc…', testnet: false }
 */
export function networkInfo(network: string, stage: Stage = 'mainnet'): NetworkInfo {
  return KNOWN[network] ?? { name: network, testnet: stage === 'testnet' }
}
