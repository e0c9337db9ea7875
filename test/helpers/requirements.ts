import type { PaymentRequirements } from '@x402/core/types'

/** The `exact` PaymentRequirements of the Base rail as the service offers them (mainnet USDC). */
export const BASE_REQUIREMENTS: PaymentRequirements = {
  scheme: 'exact',
  network: 'eip155:8453',
  amount: '1000',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  maxTimeoutSeconds: 60,
  extra: { name: 'USD Coin', version: '2' },
}

/** The `exact` PaymentRequirements of the Solana rail (mainnet USDC, a facilitator's fee payer). */
export const SOLANA_REQUIREMENTS: PaymentRequirements = {
  ...BASE_REQUIREMENTS,
  network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
  asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  payTo: '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4',
  extra: { feePayer: 'EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd' },
}
