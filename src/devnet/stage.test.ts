import { describe, expect, it } from 'vitest'
import { devStage } from './stage.js'

describe('devStage', () => {
  it('poses as Base and Solana mainnet by default', () => {
    const stage = devStage()
    expect(stage.stage).toBe('mainnet')
    expect(stage.evm.chain.id).toBe(8453)
    expect(stage.evm).toMatchObject({
      network: 'eip155:8453',
      usdc: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      domain: { name: 'USD Coin', version: '2' },
    })
    expect(stage.solana).toEqual({
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      usdcMint: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    })
  })

  it('poses as Base Sepolia (USDC named "USDC") and Solana devnet on the testnet stage', () => {
    const stage = devStage('testnet')
    expect(stage.evm.chain.id).toBe(84532)
    expect(stage.evm).toMatchObject({
      network: 'eip155:84532',
      usdc: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      domain: { name: 'USDC', version: '2' },
    })
    expect(stage.solana).toEqual({
      network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      usdcMint: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
    })
  })
})
