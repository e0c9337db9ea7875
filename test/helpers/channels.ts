import { x402Client } from '@x402/core/client'
import { toClientEvmSigner } from '@x402/evm'
import { BatchSettlementEvmScheme } from '@x402/evm/batch-settlement/client'
import { wrapFetchWithPayment } from '@x402/fetch'
import { createPublicClient, type Hex, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { BATCH_SETTLEMENT_ESCROW, batchSettlementAbi } from '../../src/devnet/batch-settlement.js'
import type { DevStack } from '../../src/devnet/stack.js'

/**
 * Payer `index` of the dev stack with the SDK's batch-settlement client scheme alone
 * (`BatchSettlementEvmScheme` from @x402/evm/batch-settlement/client, its channel state in memory)
 * behind @x402/fetch. `sent` collects every PAYMENT-SIGNATURE it sent, in order.
 *
 * @example
 * const payer = voucherPayer(stack, 0)
 * const res = await payer.fetch(`${url}/hash`, { method: 'POST', body: '{"input":"a"}' })
 */
export function voucherPayer(stack: DevStack, index: number) {
  const payer = stack.evm.payers[index]
  if (!payer) throw new Error(`no payer ${index}`)
  const account = privateKeyToAccount(payer.privateKey)
  const signer = toClientEvmSigner(
    account,
    createPublicClient({ transport: http(stack.evm.rpcUrl) }),
  )
  const scheme = new BatchSettlementEvmScheme(signer)
  const client = new x402Client().register(stack.evm.network, scheme)
  const sent: string[] = []
  const recording: typeof fetch = async (input, init) => {
    const request = new Request(input, init)
    const header = request.headers.get('payment-signature')
    if (header) sent.push(header)
    return fetch(request)
  }
  return {
    account,
    signer,
    scheme,
    client,
    sent,
    address: payer.address,
    fetch: wrapFetchWithPayment(recording, client),
  }
}

/** A payer of {@link voucherPayer}. */
export type VoucherPayer = ReturnType<typeof voucherPayer>

/** A channel's `balance` and `totalClaimed` in the escrow, in atomic USDC. */
export async function escrowChannel(
  stack: DevStack,
  id: Hex,
): Promise<{ balance: bigint; totalClaimed: bigint }> {
  const [balance, totalClaimed] = (await createPublicClient({
    transport: http(stack.evm.rpcUrl),
  }).readContract({
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName: 'channels',
    args: [id],
  })) as readonly [bigint, bigint]
  return { balance, totalClaimed }
}
