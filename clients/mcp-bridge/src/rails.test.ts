import { findDefaultAsset as findEvmAsset } from '@x402/evm'
import { findDefaultAsset as findSvmAsset, MAINNET_RPC_URL, SOLANA_MAINNET_CAIP2 } from '@x402/svm'
import { describe, expect, it } from 'vitest'
import { isUsdc, RAIL_NETWORK, RAIL_USDC, railOf, SOLANA_MAINNET_RPC_URL } from './rails.js'

describe('rail constants', () => {
  it("are the x402 SDKs' own: networks, USDC (6 decimals) and the default Solana RPC", () => {
    expect(RAIL_NETWORK.solana).toBe(SOLANA_MAINNET_CAIP2)
    expect(SOLANA_MAINNET_RPC_URL).toBe(MAINNET_RPC_URL)
    expect(findEvmAsset(RAIL_USDC.base, RAIL_NETWORK.base)).toMatchObject({
      asset: RAIL_USDC.base,
      symbol: 'USDC',
      decimals: 6,
    })
    expect(findSvmAsset(RAIL_USDC.solana, RAIL_NETWORK.solana)).toMatchObject({
      asset: RAIL_USDC.solana,
      symbol: 'USDC',
      decimals: 6,
    })
  })
})

describe('isUsdc', () => {
  it('knows the USDC of each rail and nothing else', () => {
    expect(isUsdc('base', '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913')).toBe(true)
    expect(isUsdc('solana', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')).toBe(true)
    expect(isUsdc('solana', 'epjfwdd5aufqssqem2qn1xzybapc8g4wegGkZwyTDt1v')).toBe(false)
    expect(isUsdc('base', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v')).toBe(false)
    // Base Sepolia's USDC is not the USDC of Base mainnet.
    expect(isUsdc('base', '0x036CbD53842c5426634e7929541eC2318f3dCF7e')).toBe(false)
  })
})

describe('railOf', () => {
  it('maps the two mainnets and nothing else', () => {
    expect(railOf('eip155:8453')).toBe('base')
    expect(railOf(SOLANA_MAINNET_CAIP2)).toBe('solana')
    expect(railOf('eip155:84532')).toBeUndefined()
    expect(railOf('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1')).toBeUndefined()
  })
})
