import { setTimeout as sleep } from 'node:timers/promises'
import { createPublicClient, http, parseAbiItem } from 'viem'
import type { DevStack } from '../../src/devnet/stack.js'

const TRANSFER = parseAbiItem(
  'event Transfer(address indexed from, address indexed to, uint256 value)',
)

/** The on-chain transfers to payTo, per rail: what was really settled. */
export interface Ledger {
  /** USDC `Transfer` events to payTo on the Base devnet (one per settled EIP-3009 payment). */
  evm: { transaction: string; value: bigint }[]
  /** Transactions landed on the Solana devnet (the facilitator sends only payments to payTo). */
  solana: { signature: string; ok: boolean }[]
  /** payTo's USDC balance per rail, atomic units. */
  balance: { evm: bigint; solana: bigint }
}

/**
 * Reads every transfer to payTo since the chains started, both rails, plus payTo's balances.
 *
 * @example
 * const before = await readLedger(stack)
 * // … load …
 * const window = since(await readLedger(stack), before)
 */
export async function readLedger(stack: DevStack): Promise<Ledger> {
  const client = createPublicClient({ transport: http(stack.evm.rpcUrl) })
  const [logs, evmBalance, solanaBalance] = await Promise.all([
    client.getLogs({
      address: stack.evm.usdcAddress,
      event: TRANSFER,
      args: { to: stack.evm.payTo },
      fromBlock: 0n,
      toBlock: 'latest',
    }),
    stack.evm.usdcBalance(stack.evm.payTo),
    stack.solana.usdcBalance(stack.solana.payTo),
  ])
  return {
    evm: logs.map((log) => ({
      transaction: log.transactionHash.toLowerCase(),
      value: log.args.value ?? 0n,
    })),
    solana: stack.solana.landedTransactions(),
    balance: { evm: evmBalance, solana: solanaBalance },
  }
}

/** The part of `after` that came after `before` (ledgers only grow). */
export function since(after: Ledger, before: Ledger): Ledger {
  return {
    evm: after.evm.slice(before.evm.length),
    solana: after.solana.slice(before.solana.length),
    balance: {
      evm: after.balance.evm - before.balance.evm,
      solana: after.balance.solana - before.balance.solana,
    },
  }
}

/**
 * Reads the ledger until it has not changed for `quietMs`: a settlement an instance started
 * before it was killed still runs in the facilitator and may land after the client gave up.
 */
export async function quiescentLedger(stack: DevStack, quietMs = 1_500): Promise<Ledger> {
  let last = await readLedger(stack)
  for (;;) {
    await sleep(quietMs)
    const now = await readLedger(stack)
    if (now.evm.length === last.evm.length && now.solana.length === last.solana.length) return now
    last = now
  }
}
