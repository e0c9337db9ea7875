import { createPublicClient, createWalletClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { BATCH_SETTLEMENT_ESCROW, batchSettlementAbi } from '../../src/devnet/batch-settlement.js'
import type { DevStack } from '../../src/devnet/stack.js'

const reader = (stack: Pick<DevStack, 'evm'>) =>
  createPublicClient({ transport: http(stack.evm.rpcUrl) })

/** What the escrow holds claimed but not yet settled for payTo, in atomic USDC. */
export async function unsettledForPayTo(stack: Pick<DevStack, 'evm'>): Promise<bigint> {
  const [claimed, settled] = await reader(stack).readContract({
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'receivers',
    args: [stack.evm.payTo, stack.evm.usdcAddress],
  })
  return claimed - settled
}

/**
 * Settles to payTo what the escrow holds claimed for it (the escrow's permissionless `settle`,
 * sent by a funded dev payer): a refund claims what a channel was charged without settling it,
 * and the shared dev stack's payTo must not carry that into the next file's exact balances.
 *
 * @returns the amount settled, atomic USDC
 */
export async function settleForPayTo(stack: Pick<DevStack, 'evm'>): Promise<bigint> {
  const amount = await unsettledForPayTo(stack)
  if (amount === 0n) return 0n
  const payer = stack.evm.payers[0]
  if (!payer) throw new Error('no dev payer to send the settle from')
  const wallet = createWalletClient({
    account: privateKeyToAccount(payer.privateKey),
    transport: http(stack.evm.rpcUrl),
  })
  const hash = await wallet.writeContract({
    chain: null,
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'settle',
    args: [stack.evm.payTo, stack.evm.usdcAddress],
  })
  const receipt = await reader(stack).waitForTransactionReceipt({ hash })
  if (receipt.status !== 'success') throw new Error('settle reverted')
  return amount
}
