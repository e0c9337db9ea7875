import { type Address, createTestClient, http } from 'viem'
import { multicall3RuntimeBytecode } from './contracts/multicall3.js'

/** Multicall3's address, the same on every EVM chain (github.com/mds1/multicall). */
export const MULTICALL3_ADDRESS: Address = '0xcA11bde05977b3631167028862bE2a173976CA11'

/**
 * Places Multicall3 at {@link MULTICALL3_ADDRESS} on an anvil node (`anvil_setCode`).
 *
 * @x402/evm's facilitator batches its diagnosis of a failed EIP-3009 simulation (balance, token
 * name/version, authorization state) through `tryAggregate`; without the contract every failure
 * collapses into a generic simulation error.
 *
 * @param rpcUrl - anvil JSON-RPC endpoint
 * @throws viem's RPC error if the node rejects `anvil_setCode`
 */
export async function installMulticall3(rpcUrl: string): Promise<void> {
  const node = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
  await node.setCode({ address: MULTICALL3_ADDRESS, bytecode: multicall3RuntimeBytecode })
}
