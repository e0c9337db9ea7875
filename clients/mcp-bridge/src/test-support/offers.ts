import type { PaymentRequired, PaymentRequirements } from '@x402/core/types'

// Test data for the bridge's unit tests: PaymentRequired objects shaped as the service sends them
// (USDC at the real addresses, payTo of the devnet), and a public test key.

/** Anvil's first default account: a well-known test key that holds nothing on any real chain. */
export const TEST_EVM_KEY = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'
export const TEST_EVM_ADDRESS = '0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266'

export const BASE = 'eip155:8453'
export const SOL = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
export const USDC_BASE = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
export const USDC_SOL = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v'

/** An `exact` USDC offer on Base. */
export const baseOffer = (amount = '1000', extra: Partial<PaymentRequirements> = {}) =>
  ({
    scheme: 'exact',
    network: BASE,
    amount,
    asset: USDC_BASE,
    payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
    ...extra,
  }) as PaymentRequirements

/** An `exact` USDC offer on Solana. */
export const solanaOffer = (amount = '1000', extra: Partial<PaymentRequirements> = {}) =>
  ({
    scheme: 'exact',
    network: SOL,
    amount,
    asset: USDC_SOL,
    payTo: 'GnHJ6G4Tr2c3ufU8Ybm8CwVgoo9pD1CsWd3oESJAzcBk',
    maxTimeoutSeconds: 60,
    extra: { feePayer: 'EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd' },
    ...extra,
  }) as PaymentRequirements

/** A PaymentRequired offering `accepts` for the MCP tool `name`. */
export const paymentRequired = (
  accepts: PaymentRequirements[],
  name = 'payload_hash',
): PaymentRequired => ({
  x402Version: 2,
  error: 'Payment required',
  resource: { url: 'http://127.0.0.1:1/mcp', description: name, mimeType: 'application/json' },
  accepts,
})

/** The service's receiver-authorizer in {@link channelOffer} (anvil's fourth default account). */
export const RECEIVER_AUTHORIZER = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'

/** A `batch-settlement` USDC offer on Base, as the service makes it (minDeposit 1 USDC). */
export const channelOffer = (
  amount = '1000',
  extra: Record<string, unknown> = {},
  over: Partial<PaymentRequirements> = {},
) =>
  ({
    ...baseOffer(amount),
    scheme: 'batch-settlement',
    extra: {
      name: 'USD Coin',
      version: '2',
      receiverAuthorizer: RECEIVER_AUTHORIZER,
      withdrawDelay: 86_400,
      minDeposit: '1000000',
      ...extra,
    },
    ...over,
  }) as PaymentRequirements
