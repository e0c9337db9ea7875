import { ExactEvmScheme } from '@x402/evm/exact/server'
import { describe, expect, it } from 'vitest'
import { configuredRails, priceOn } from './rails.js'

const PAY_TO_EVM = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const PAY_TO_SOLANA = '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4'
const both = {
  payToEvm: PAY_TO_EVM,
  payToSolana: PAY_TO_SOLANA,
  railOrder: ['evm', 'solana'] as const,
}

describe('configuredRails', () => {
  it('is Base and Solana mainnet by default', () => {
    expect(configuredRails(both)).toEqual([
      {
        id: 'evm',
        network: 'eip155:8453',
        name: 'Base',
        testnet: false,
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        payTo: PAY_TO_EVM,
        extra: { name: 'USD Coin', version: '2' },
      },
      {
        id: 'solana',
        network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
        name: 'Solana',
        testnet: false,
        asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
        payTo: PAY_TO_SOLANA,
        extra: {},
      },
    ])
  })

  it('is Base Sepolia (EIP-712 name "USDC") and Solana devnet on the testnet stage', () => {
    expect(configuredRails({ ...both, stage: 'testnet', railOrder: ['solana', 'evm'] })).toEqual([
      {
        id: 'solana',
        network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
        name: 'Solana devnet',
        testnet: true,
        asset: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
        payTo: PAY_TO_SOLANA,
        extra: {},
      },
      {
        id: 'evm',
        network: 'eip155:84532',
        name: 'Base Sepolia',
        testnet: true,
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        payTo: PAY_TO_EVM,
        extra: { name: 'USDC', version: '2' },
      },
    ])
  })

  it('lets explicit settings win over the stage', () => {
    const token = '0x0000000000000000000000000000000000000abc'
    const [evm, solana] = configuredRails({
      ...both,
      stage: 'testnet',
      usdcEvm: token,
      usdcEvmName: 'Test Dollar',
      usdcEvmVersion: '1',
      usdcSolana: 'So11111111111111111111111111111111111111112',
      solanaNetwork: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
    })
    expect(evm).toMatchObject({
      network: 'eip155:84532',
      asset: token,
      extra: { name: 'Test Dollar', version: '1' },
    })
    expect(solana).toMatchObject({
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      name: 'Solana',
      testnet: false,
      asset: 'So11111111111111111111111111111111111111112',
    })
  })

  it('keeps the stage EIP-712 domain for an explicit USDC_EVM (only the address changes)', () => {
    const [evm] = configuredRails({
      payToEvm: PAY_TO_EVM,
      stage: 'testnet',
      usdcEvm: '0x0000000000000000000000000000000000000abc',
      railOrder: ['evm'],
    })
    expect(evm?.extra).toEqual({ name: 'USDC', version: '2' })
  })

  it('takes the mint of an explicit SOLANA_NETWORK, and the stage mint for one the SDK lacks', () => {
    const devnet = configuredRails({
      payToSolana: PAY_TO_SOLANA,
      solanaNetwork: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
      railOrder: ['solana'],
    })
    expect(devnet[0]).toMatchObject({
      asset: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
      name: 'Solana devnet',
      testnet: true,
    })
    const unknown = 'solana:11111111111111111111111111111111'
    const other = configuredRails({
      payToSolana: PAY_TO_SOLANA,
      solanaNetwork: unknown,
      stage: 'testnet',
      railOrder: ['solana'],
    })
    expect(other[0]).toMatchObject({
      asset: '4zMMC9srt5Ri5X14GAgXhaHii3GnPAEERYPJgZJDncDU',
      name: unknown,
      testnet: true,
    })
  })

  it('leaves out a rail without a payTo', () => {
    expect(configuredRails({ payToSolana: PAY_TO_SOLANA, railOrder: ['evm', 'solana'] })).toEqual([
      expect.objectContaining({ id: 'solana' }),
    ])
  })
})

describe('priceOn', () => {
  it('is the atomic amount with the rail asset and a copy of its extra', () => {
    const [evm] = configuredRails({ payToEvm: PAY_TO_EVM, stage: 'testnet', railOrder: ['evm'] })
    if (!evm) throw new Error('no rail')
    const price = priceOn(evm, '1000')
    expect(price).toEqual({
      amount: '1000',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      extra: { name: 'USDC', version: '2' },
    })
    expect(price.extra).not.toBe(evm.extra)
  })

  it('passes through the SDK server scheme unchanged on Base Sepolia (no dollar parsing)', async () => {
    const [evm] = configuredRails({ payToEvm: PAY_TO_EVM, stage: 'testnet', railOrder: ['evm'] })
    if (!evm) throw new Error('no rail')
    expect(await new ExactEvmScheme().parsePrice(priceOn(evm, '1000'), 'eip155:84532')).toEqual({
      amount: '1000',
      asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
      extra: { name: 'USDC', version: '2' },
    })
  })
})
