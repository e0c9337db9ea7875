import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from '@x402/evm'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { type Address, createPublicClient, createTestClient, type Hex, http } from 'viem'
import {
  batchSettlementAbi,
  batchSettlementRuntimeBytecode,
  erc3009DepositCollectorRuntimeBytecode,
} from './contracts/batch-settlement.js'

export { batchSettlementAbi, erc3009DepositCollectorAbi } from './contracts/batch-settlement.js'

/** Where @x402/evm expects the `batch-settlement` escrow (x402BatchSettlement) on every chain. */
export const BATCH_SETTLEMENT_ESCROW: Address = BATCH_SETTLEMENT_ADDRESS

/** Where @x402/evm expects the ERC-3009 deposit collector on every chain. */
export const BATCH_SETTLEMENT_ERC3009_COLLECTOR: Address = ERC3009_DEPOSIT_COLLECTOR_ADDRESS

/** A channel's immutable configuration, as the escrow's `ChannelConfig` struct takes it. */
export interface BatchSettlementChannelConfig {
  payer: Address
  /** EOA that signs vouchers, or the zero address to check them against `payer` (EIP-1271). */
  payerAuthorizer: Address
  receiver: Address
  /** Signs claim batches and refunds (EIP-712); never zero. */
  receiverAuthorizer: Address
  token: Address
  /** Seconds a timed withdrawal waits, 900 to 2 592 000. */
  withdrawDelay: number
  salt: Hex
}

// The channel the installer hashes on both sides; any valid config would do.
const PROBE_CONFIG: BatchSettlementChannelConfig = {
  payer: '0x0000000000000000000000000000000000000a11',
  payerAuthorizer: '0x0000000000000000000000000000000000000a12',
  receiver: '0x0000000000000000000000000000000000000b11',
  receiverAuthorizer: '0x0000000000000000000000000000000000000b12',
  token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  withdrawDelay: 900,
  salt: '0x00000000000000000000000000000000000000000000000000000000000000a5',
}

/**
 * Installs our devnet `batch-settlement` escrow (src/devnet/contracts/X402BatchSettlement.sol,
 * a stand-in written from the x402 specification, not the audited contract) at
 * {@link BATCH_SETTLEMENT_ESCROW} and its ERC-3009 deposit collector at
 * {@link BATCH_SETTLEMENT_ERC3009_COLLECTOR} on an anvil node (`anvil_setCode`; both keep no
 * constructor state, so the runtime code is all they need), then checks that the escrow's
 * `getChannelId(config)` (eth_call) equals the SDK's `computeChannelId(config, chainId)`: the
 * EIP-712 domain the SDK signs under (name, version, chain id, address) is the one the escrow
 * verifies under.
 *
 * The Permit2 deposit collector is not installed: deposits work with `eip3009` (USDC) only.
 *
 * @param rpcUrl - anvil JSON-RPC endpoint (any chain id; USDC need not be installed)
 * @returns the channel id both sides computed for the probe config
 * @throws Error if the node rejects `anvil_setCode`, or the two channel ids differ
 */
export async function installBatchSettlement(rpcUrl: string): Promise<Hex> {
  const transport = http(rpcUrl)
  const node = createTestClient({ mode: 'anvil', transport })
  const reader = createPublicClient({ transport })
  await node.setCode({ address: BATCH_SETTLEMENT_ESCROW, bytecode: batchSettlementRuntimeBytecode })
  await node.setCode({
    address: BATCH_SETTLEMENT_ERC3009_COLLECTOR,
    bytecode: erc3009DepositCollectorRuntimeBytecode,
  })
  const chainId = await reader.getChainId()
  const onChain = await reader.readContract({
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'getChannelId',
    args: [PROBE_CONFIG],
  })
  const sdk = computeChannelId(PROBE_CONFIG, chainId)
  if (onChain.toLowerCase() !== sdk.toLowerCase()) {
    throw new Error(
      `batch-settlement escrow channel id ${onChain} differs from the SDK's ${sdk} on chain ${chainId}`,
    )
  }
  return onChain
}
