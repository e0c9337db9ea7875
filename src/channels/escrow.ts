import { BATCH_SETTLEMENT_ADDRESS, ERC3009_DEPOSIT_COLLECTOR_ADDRESS } from '@x402/evm'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { createPublicClient, http, parseAbi } from 'viem'
import { describeError } from '../logger.js'

/**
 * The escrow's views the service reads, as `@x402/evm` 2.27 calls them (the x402
 * `batch-settlement` EVM specification's `getChannelId` and `pendingWithdrawals`).
 */
const ESCROW_ABI = parseAbi([
  'struct ChannelConfig { address payer; address payerAuthorizer; address receiver; address receiverAuthorizer; address token; uint40 withdrawDelay; bytes32 salt; }',
  'function getChannelId(ChannelConfig config) view returns (bytes32)',
  'function pendingWithdrawals(bytes32 channelId) view returns (uint128 amount, uint40 initiatedAt)',
])

/**
 * A channel config no payer would open, used only to ask the escrow for its id: the contract
 * and the SDK hash it under the "x402 Batch Settlement" EIP-712 domain of this chain and address,
 * so equal ids prove the code there speaks the specification's domain on this chain.
 */
export const PROBE_CONFIG = {
  payer: '0x000000000000000000000000000000000000dEaD',
  payerAuthorizer: '0x0000000000000000000000000000000000000001',
  receiver: '0x0000000000000000000000000000000000000002',
  receiverAuthorizer: '0x0000000000000000000000000000000000000003',
  token: '0x0000000000000000000000000000000000000004',
  withdrawDelay: 86_400,
  salt: '0x7061796c6f61642d746f6f6c73000000000000000000000000000000000000ff',
} as const

/** What the start-up check found: the escrow usable on this chain, or why not. */
export type EscrowCheck = { ok: true } | { ok: false; reason: string }

/** Reads the batch-settlement escrow of one chain (EVM_RPC_URL). */
export interface EscrowReader {
  /**
   * The start-up check: code at the escrow's and the deposit collector's fixed addresses, and
   * the escrow's `getChannelId` of {@link PROBE_CONFIG} equal to the SDK's `computeChannelId`.
   * Never throws.
   */
  check(): Promise<EscrowCheck>
  /** Which of these channels have a withdrawal started (`pendingWithdrawals(id).initiatedAt > 0`). */
  withdrawing(channelIds: string[]): Promise<string[]>
}

/**
 * The escrow as the chain at `rpcUrl` has it, through viem.
 *
 * @param network - the CAIP-2 network the RPC must serve, e.g. `eip155:8453`
 * @example const reader = escrowReader('http://127.0.0.1:8545', 'eip155:8453'); await reader.check()
 */
export function escrowReader(rpcUrl: string, network: `${string}:${string}`): EscrowReader {
  const client = createPublicClient({
    transport: http(rpcUrl, { timeout: 4_000, retryCount: 1 }),
    batch: { multicall: true },
  })
  return {
    async check() {
      try {
        const chainId = await client.getChainId()
        if (`eip155:${chainId}` !== network) {
          return { ok: false, reason: `EVM_RPC_URL serves eip155:${chainId}, not ${network}` }
        }
        for (const [name, address] of [
          ['escrow', BATCH_SETTLEMENT_ADDRESS],
          ['deposit collector', ERC3009_DEPOSIT_COLLECTOR_ADDRESS],
        ] as const) {
          const code = await client.getCode({ address })
          if (!code || code === '0x') return { ok: false, reason: `no ${name} code at ${address}` }
        }
        const onChain = await client.readContract({
          address: BATCH_SETTLEMENT_ADDRESS,
          abi: ESCROW_ABI,
          functionName: 'getChannelId',
          args: [PROBE_CONFIG],
        })
        const expected = computeChannelId(PROBE_CONFIG, network)
        if (onChain.toLowerCase() !== expected.toLowerCase()) {
          return {
            ok: false,
            reason: "the escrow's getChannelId differs from the specification's channel id",
          }
        }
        return { ok: true }
      } catch (error) {
        // viem's messages may hold the URL, which may hold a key.
        return {
          ok: false,
          reason: `escrow not readable: ${(error as Error)?.name ?? describeError(error)}`,
        }
      }
    },
    async withdrawing(channelIds) {
      const started = await Promise.all(
        channelIds.map((id) =>
          client.readContract({
            address: BATCH_SETTLEMENT_ADDRESS,
            abi: ESCROW_ABI,
            functionName: 'pendingWithdrawals',
            args: [id as `0x${string}`],
          }),
        ),
      )
      return channelIds.filter((_, i) => (started[i]?.[1] ?? 0) > 0)
    },
  }
}
