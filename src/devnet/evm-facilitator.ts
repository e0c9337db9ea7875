import type { x402Facilitator } from '@x402/core/facilitator'
import { toFacilitatorEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/facilitator'
import { ExactEvmScheme } from '@x402/evm/exact/facilitator'
import { type Chain, createWalletClient, type Hash, type Hex, http, publicActions } from 'viem'
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
  /**
   * Also registers the SDK's `batch-settlement` facilitator scheme (deposits, claims, settles,
   * refunds on the escrow at its fixed address); default true.
   */
  batchSettlement?: boolean
}

/**
 * Registers the SDK's `exact` EVM facilitator scheme (`ExactEvmScheme` from
 * `@x402/evm/exact/facilitator`: EIP-3009 `transferWithAuthorization`, with Permit2 as the SDK
 * provides it) for x402 v2 on `eip155:8453` (`eip155:84532` on the testnet stage), backed by a
 * viem wallet on `rpcUrl`.
 *
 * Only v2 is registered (not the SDK's v1 network names); with `batchSettlement` (the default)
 * the SDK's `batch-settlement` scheme too, so `/supported` lists both kinds on the network.
 *
 * @example
 * const facilitator = new x402Facilitator()
 * registerDevEvmScheme(facilitator, { rpcUrl: devnet.rpcUrl, privateKey: devnet.facilitatorPrivateKey })
 */
export function registerDevEvmScheme(
  facilitator: x402Facilitator,
  { rpcUrl, privateKey, stage, batchSettlement = true }: DevEvmSchemeOptions,
): void {
  const { chain, network } = devStage(stage).evm
  // One transaction at a time, each sent once the previous one is mined, with the nonce the node
  // reports (no local nonce manager). Concurrent settlements used to share viem's `nonceManager`
  // and broadcast side by side, which stalled the devnet under 4 paid calls at a time:
  // - a send that fails after taking a nonce (gas estimation of an authorization that a racing
  //   settle of the same payment already used) resets the manager while other sends hold later
  //   nonces; the resets race those sends, so a settlement got a nonce already used ("nonce too
  //   low": a valid payment refused) or a nonce was skipped for good;
  // - anvil sorts a transaction that arrives before its predecessor is mined by markers computed
  //   before an await; when the predecessor is mined in between, the transaction waits in the
  //   queued pool forever, and every later one queues behind it.
  // Either way every later settlement waited for a receipt that never came (FACILITATOR_TIMEOUT_MS,
  // then 503) until the chain was restarted. With one transaction in flight there is no nonce to
  // lose and nothing for the pool to sort. Anvil mines at once, so the queue is short: 300
  // settlements 8 at a time took the same 11 s before and after, on a loaded 2-core machine.
  // Resetting the nonce manager on failure is what viem already does, and it is what races.
  const account = privateKeyToAccount(privateKey)
  // Anvil mines each transaction at once; poll receipts quickly instead of viem's 4 s default.
  const client = createWalletClient({
    account,
    chain,
    transport: http(rpcUrl),
    pollingInterval: 50,
  }).extend(publicActions)
  // eth_sendRawTransactionSync (EIP-7966, which anvil serves) broadcasts and returns the receipt
  // in one round trip, so the queue holds each transaction for no receipt polling; a wedged node
  // is bounded by the transport's timeout (viem's 10 s), after which the queue moves on.
  const oneAtATime = serialQueue()
  const mined = (receipt: Promise<{ transactionHash: Hash }>) =>
    receipt.then((r) => r.transactionHash)

  const signer = toFacilitatorEvmSigner({
    address: account.address,
    getCode: (args) => client.getCode(args),
    readContract: (args) => client.readContract({ ...args, args: args.args ?? [] }),
    // The client method fixes the typed-data generic; the action accepts the SDK's loose shape.
    verifyTypedData: (args) =>
      verifyTypedData<Record<string, unknown>, string, Chain>(client, args),
    writeContract: (args) =>
      oneAtATime(() => mined(client.writeContractSync({ ...args, args: args.args }))),
    sendTransaction: (args) => oneAtATime(() => mined(client.sendTransactionSync(args))),
    waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
  })
  facilitator.register(network, new ExactEvmScheme(signer))
  // Prepaid channels on our devnet escrow (src/devnet/batch-settlement.ts). No receiver-authorizer
  // key here: the service signs its own claims and refunds (BATCH_SETTLEMENT_RECEIVER_AUTHORIZER_KEY).
  if (batchSettlement) facilitator.register(network, new BatchSettlementEvmScheme(signer))
}

/**
 * Runs tasks one after another in call order, whatever each one's outcome. (A promise chain of a
 * few lines: p-limit with a concurrency of 1 would do the same as a new dependency.)
 *
 * @example
 * const serial = serialQueue()
 * await Promise.all([serial(a), serial(b)]) // b starts once a has settled
 */
export function serialQueue(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve()
  return function enqueue<T>(task: () => Promise<T>): Promise<T> {
    const run = tail.then(task, task)
    tail = run.catch(() => undefined)
    return run
  }
}
