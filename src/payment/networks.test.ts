import { describe, expect, it } from 'vitest'
import { networkInfo, STAGE_NETWORKS, solanaUsdc } from './networks.js'

describe('STAGE_NETWORKS', () => {
  it('holds USDC on Base and Solana mainnet, and on Base Sepolia and Solana devnet', () => {
    expect(STAGE_NETWORKS).toEqual({
      mainnet: {
        evm: {
          network: 'eip155:8453',
          usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
          domain: { name: 'USD Coin', version: '2' },
        },
        solana: {
          network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
          usdc: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
        },
      },
      testnet: {
        evm: {
          network: 'eip155:84532',
          usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
          domain: { name: 'USDC', version: '2' },
        },
        solana: {
          network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
          usdc: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
        },
      },
    })
  })
})

describe('solanaUsdc', () => {
  it('gives the SDK mint of a known network and undefined otherwise', () => {
    expect(solanaUsdc('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1')).toBe(
      '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
    )
    expect(solanaUsdc('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp')).toBe(
      'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    )
    expect(solanaUsdc('solana:11111111111111111111111111111111')).toBeUndefined()
  })
})

describe('networkInfo', () => {
  it('names the known networks and marks the test networks', () => {
    expect(networkInfo('eip155:8453')).toEqual({ name: 'Base', testnet: false })
    expect(networkInfo('eip155:84532')).toEqual({ name: 'Base Sepolia', testnet: true })
    expect(networkInfo('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp')).toEqual({
      name: 'Solana',
      testnet: false,
    })
    expect(networkInfo('solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1', 'mainnet')).toEqual({
      name: 'Solana devnet',
      testnet: true,
    })
  })

  it('names an unknown network by its identifier, a test network only on the testnet stage', () => {
    const other = 'solana:11111111111111111111111111111111'
    expect(networkInfo(other)).toEqual({ name: other, testnet: false })
    expect(networkInfo(other, 'testnet')).toEqual({ name: other, testnet: true })
  })
})
