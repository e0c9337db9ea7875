import type { DevStack } from '../../src/devnet/stack.js'
import type { RailId } from '../../src/payment/rails.js'
import type { PayerKeys } from './clients.js'

/** A rail of the dev stack: `evm` (Base, eip155:8453, on anvil) or `solana` (on litesvm). */
export type Rail = RailId

/**
 * The keys of a Solana payer on the dev stack. The SVM client scheme also needs the RPC URL (USDC
 * mint, recent blockhash) and the CAIP-2 network the stack serves.
 *
 * @param secretKey - the 64-byte Ed25519 secret key (seed and public key)
 */
export function solanaKeys(stack: DevStack, secretKey: Uint8Array): PayerKeys {
  return { solana: { secretKey, rpcUrl: stack.solana.rpcUrl, network: stack.solana.network } }
}

/**
 * The keys of the dev stack's funded payer `index` on one rail, as `paidFetch` and `payerClient`
 * take them.
 *
 * @example const pay = await paidFetch(payerKeys(stack, 'solana', 1), 'solana')
 * @param index - 0-based; below the `payers` count given to `startDevStack`
 * @throws Error when the stack has no payer `index` on that rail
 */
export function payerKeys(stack: DevStack, rail: Rail, index = 0): PayerKeys {
  if (rail === 'evm') {
    const payer = stack.evm.payers[index]
    if (!payer) throw noPayer(rail, index, stack.evm.payers.length)
    return { evmPrivateKey: payer.privateKey }
  }
  const payer = stack.solana.payers[index]
  if (!payer) throw noPayer(rail, index, stack.solana.payers.length)
  return solanaKeys(stack, payer.secretKey)
}

function noPayer(rail: Rail, index: number, count: number): Error {
  return new Error(
    `no ${rail} payer ${index}: the dev stack has ${count} (startDevStack({ payers }))`,
  )
}

/**
 * The keys of payer `index` on both rails at once, for a client that can pay either way and picks
 * by preference.
 *
 * @throws Error when the stack has no payer `index`
 */
export function bothRails(stack: DevStack, index = 0): PayerKeys {
  return { ...payerKeys(stack, 'evm', index), ...payerKeys(stack, 'solana', index) }
}

/** The USDC balance of our payTo on `rail`, in atomic units (6 decimals). */
export function payToBalance(stack: DevStack, rail: Rail): Promise<bigint> {
  return rail === 'evm'
    ? stack.evm.usdcBalance(stack.evm.payTo)
    : stack.solana.usdcBalance(stack.solana.payTo)
}
