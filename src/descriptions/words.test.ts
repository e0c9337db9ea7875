import { describe, expect, it } from 'vitest'
import { networksInWords, usdcDecimal } from './words.js'

describe('usdcDecimal', () => {
  it('formats atomic units with 6 decimals', () => {
    expect(usdcDecimal('1000')).toBe('0.001')
    expect(usdcDecimal(3_000_000n)).toBe('3')
    expect(usdcDecimal('1234567')).toBe('1.234567')
  })
})

describe('networksInWords', () => {
  const base = { name: 'Base', testnet: false }
  const solana = { name: 'Solana', testnet: false }
  const sepolia = { name: 'Base Sepolia', testnet: true }
  const devnet = { name: 'Solana devnet', testnet: true }

  it('lists mainnet networks plainly', () => {
    expect(networksInWords([base, solana], 'and')).toBe('Base and Solana')
    expect(networksInWords([base, solana], 'or')).toBe('Base or Solana')
    expect(networksInWords([solana], 'or')).toBe('Solana')
    expect(networksInWords([], 'or')).toBe('no network yet')
  })

  it('says when the money is play money', () => {
    expect(networksInWords([sepolia, devnet], 'or')).toBe(
      'Base Sepolia or Solana devnet (test networks: faucet USDC, no value)',
    )
    expect(networksInWords([devnet], 'and')).toBe(
      'Solana devnet (a test network: faucet USDC, no value)',
    )
    expect(networksInWords([base, devnet], 'and')).toBe(
      'Base and Solana devnet (Solana devnet is a test network: faucet USDC, no value)',
    )
  })

  it('says when the networks are simulated on a local devnet, whatever they pose as', () => {
    const local = <T extends object>(rail: T) => ({ ...rail, devnet: true as const })
    expect(networksInWords([local(base), local(solana)], 'and')).toBe(
      'Base and Solana (simulated on a local devnet, for trying the service: its USDC has no value, no real money moves)',
    )
    expect(networksInWords([local(sepolia)], 'or')).toBe(
      'Base Sepolia (simulated on a local devnet, for trying the service: its USDC has no value, no real money moves)',
    )
  })
})
