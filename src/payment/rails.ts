import type { AssetAmount, Network } from '@x402/core/types'

/** Which chain family a rail settles on. */
export type RailId = 'evm' | 'solana'

/**
 * One payment rail of SPEC section 1: a CAIP-2 network, the USDC asset on it and our payTo.
 *
 * @example
 * { id: 'evm', network: 'eip155:8453', asset: '0x8335…2913', payTo: '0xabc…', extra: { name: 'USD Coin', version: '2' } }
 */
export interface Rail {
  id: RailId
  /** CAIP-2 network identifier. */
  network: Network
  /** USDC contract (EVM) or mint (Solana). */
  asset: string
  /** Receiving address. */
  payTo: string
  /** Scheme-specific `extra` we add ourselves (the EIP-712 domain of USDC on EVM). */
  extra: Record<string, unknown>
}

/** Rail settings, as read from config. */
export interface RailSettings {
  payToEvm?: string | undefined
  payToSolana?: string | undefined
  usdcEvm: string
  usdcSolana: string
  solanaNetwork: string
  railOrder: readonly RailId[]
}

/** CAIP-2 identifier of Base mainnet. */
export const BASE_NETWORK: Network = 'eip155:8453'

/**
 * EIP-712 domain of Circle's USDC (FiatTokenV2): clients sign EIP-3009 authorizations against it.
 */
export const USDC_EVM_DOMAIN = { name: 'USD Coin', version: '2' } as const

/**
 * The configured rails in advertising order. A rail without a payTo is left out.
 *
 * @param settings - payTo addresses, assets, Solana network and order
 * @returns the rails, `railOrder` first
 */
export function configuredRails(settings: RailSettings): Rail[] {
  const rails: Record<RailId, Rail | undefined> = {
    evm: settings.payToEvm
      ? {
          id: 'evm',
          network: BASE_NETWORK,
          asset: settings.usdcEvm,
          payTo: settings.payToEvm,
          extra: { ...USDC_EVM_DOMAIN },
        }
      : undefined,
    solana: settings.payToSolana
      ? {
          id: 'solana',
          network: settings.solanaNetwork as Network,
          asset: settings.usdcSolana,
          payTo: settings.payToSolana,
          extra: {},
        }
      : undefined,
  }
  return settings.railOrder.map((id) => rails[id]).filter((r): r is Rail => r !== undefined)
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

/**
 * Formats atomic USDC units (6 decimals) as a decimal string.
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
