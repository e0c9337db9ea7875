import type { x402Facilitator } from '@x402/core/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { type Chain, createWalletClient, type Hex, http, nonceManager, publicActions } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { verifyTypedData } from 'viem/actions'
import { devStage, type Stage } from './stage.js'

/** CAIP-2 id of Base mainnet, the network the devnet impersonates. */
export const BASE_NETWORK = 'eip155:8453' as const

export interface DevEvmSchemeOptions {
  /** JSON-RPC endpoint of the chain to verify against and settle on. */
  rpcUrl: string
  /** Facilitator key (0x-prefixed 32-byte hex); its account pays the gas of every settlement. */
  privateKey: Hex
  /** `testnet`: the chain is Base Sepolia (`eip155:84532`); default `mainnet`. */
  stage?: Stage
}

/**
 * Registers the SDK's `exact` EVM facilitator scheme (`ExactEvmScheme` from
 * `@x402/evm/exact/facilitator`: EIP-3009 `transferWithAuthorization`, with Permit2 as the SDK
 * provides it) for x402 v2 on `eip155:8453` (`eip155:84532` on the testnet stage), backed by a
 * viem wallet on `rpcUrl`.
 *
 * Only v2 is registered (not the SDK's v1 network names), so `/supported` lists exactly one kind.
 *
 * @example
 * const facilitator = new x402Facilitator()
 * registerDevEvmScheme(facilitator, { rpcUrl: devnet.rpcUrl, privateKey: devnet.facilitatorPrivateKey })
 */
export function registerDevEvmScheme(
  facilitator: x402Facilitator,
  { rpcUrl, privateKey, stage }: DevEvmSchemeOptions,
): void {
  const { chain, network } = devStage(stage).evm
  // The nonce manager hands out nonces locally, so concurrent settlements from the one facilitator
  // account do not race on `eth_getTransactionCount`.
  const account = privateKeyToAccount(privateKey, { nonceManager })
  // Anvil mines each transaction at once; poll receipts quickly instead of viem's 4 s default.
  const client = createWalletClient({
    account,
    chain,
    transport: http(rpcUrl),
    pollingInterval: 50,
  }).extend(publicActions)

  const signer = toFacilitatorEvmSigner({
    address: account.address,
    getCode: (args) => client.getCode(args),
    readContract: (args) => client.readContract({ ...args, args: args.args ?? [] }),
    // The client method fixes the typed-data generic; the action accepts the SDK's loose shape.
    verifyTypedData: (args) =>
      verifyTypedData<Record<string, unknown>, string, Chain>(client, args),
    writeContract: (args) => client.writeContract({ ...args, args: args.args }),
    sendTransaction: (args) => client.sendTransaction(args),
    waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
  })
  facilitator.register(network, new ExactEvmScheme(signer))
}
