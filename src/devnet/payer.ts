import { createKeyPairSignerFromBytes } from '@solana/kit'
import { x402Client } from '@x402/core/client'
import type { Network, PaymentRequirements, SchemeNetworkClient } from '@x402/core/types'
import type { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import { ExactSvmScheme } from '@x402/svm/exact/client'
import type { Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { STAGE_NETWORKS } from '../payment/networks.js'

/** Which rail a client should choose when the 402 offers both. */
export type Preference = 'evm' | 'solana'

const prefer =
  (family: Preference) =>
  (_version: number, offered: PaymentRequirements[]): PaymentRequirements => {
    const prefix = family === 'evm' ? 'eip155:' : 'solana:'
    const chosen = offered.find((r) => r.network.startsWith(prefix)) ?? offered[0]
    if (!chosen) throw new Error('no payment requirements offered')
    return chosen
  }

/** Keys of a payer on each chain; either may be absent. */
export interface PayerKeys {
  evmPrivateKey?: Hex
  /**
   * A Solana payer: its key, the RPC it reads the mint and a blockhash from, and the network it
   * pays on (default: Solana mainnet and devnet both, whichever the 402 offers).
   */
  solana?: { secretKey: Uint8Array; rpcUrl: string; network?: Network | undefined }
}

/**
 * An official x402 client (`x402Client`) with the `exact` EVM and/or SVM client schemes. The EVM
 * key signs for Base and Base Sepolia alike (the 402 says which; the chain id and the token's
 * EIP-712 domain come from the offer), and the Solana key for mainnet and devnet unless a network
 * is given, so one payer serves either stage.
 *
 * Given `channels` (the `batch-settlement` client scheme of the same EVM key, from
 * `channelScheme` in ./payer-channels.ts), the EVM key pays with it instead of `exact`: a deposit
 * into a prepaid channel first, vouchers after; a 402 without a `batch-settlement` offer on the
 * EVM rail then cannot be paid on that rail.
 *
 * @param keys - the payer's keys (a Solana payer needs the RPC for the mint and blockhash)
 * @param preference - the rail to choose when both are offered
 * @param channels - the EVM key's `batch-settlement` scheme, to pay by voucher
 */
export async function payerClient(
  keys: PayerKeys,
  preference: Preference = 'evm',
  channels?: BatchSettlementEvmScheme,
): Promise<x402Client> {
  const client = new x402Client(prefer(preference))
  if (keys.evmPrivateKey) {
    const scheme: SchemeNetworkClient =
      channels ?? new ExactEvmScheme(privateKeyToAccount(keys.evmPrivateKey))
    for (const { evm } of Object.values(STAGE_NETWORKS)) client.register(evm.network, scheme)
  }
  if (keys.solana) {
    const signer = await createKeyPairSignerFromBytes(keys.solana.secretKey)
    const scheme = new ExactSvmScheme(signer, { rpcUrl: keys.solana.rpcUrl })
    const networks = keys.solana.network
      ? [keys.solana.network]
      : Object.values(STAGE_NETWORKS).map(({ solana }) => solana.network)
    for (const network of networks) client.register(network, scheme)
  }
  return client
}

/**
 * `fetch` that pays 402s with the official `@x402/fetch` wrapper (by voucher on the EVM rail when
 * given the `batch-settlement` scheme: see {@link payerClient}).
 *
 * @example
 * const pay = await paidFetch({ evmPrivateKey: stack.evm.payers[0].privateKey })
 * const res = await pay(`${baseUrl}/hash`, { method: 'POST', body: '{"input":"abc"}' })
 */
export async function paidFetch(
  keys: PayerKeys,
  preference: Preference = 'evm',
  channels?: BatchSettlementEvmScheme,
) {
  return wrapFetchWithPayment(fetch, await payerClient(keys, preference, channels))
}
