import {
  type Address,
  createPublicClient,
  http,
  isAddressEqual,
  type Log,
  parseAbiItem,
} from 'viem'
import { neverThrowing } from './never-throws.js'
import type { SettlementJudge, SettlementQuestion, SettlementVerdict } from './types.js'

/** EIP-3009: emitted by the token when an authorization is executed. */
export const AUTHORIZATION_USED = parseAbiItem(
  'event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)',
)
/** EIP-3009: emitted by the token when the authorizer cancels an unused authorization. */
export const AUTHORIZATION_CANCELED = parseAbiItem(
  'event AuthorizationCanceled(address indexed authorizer, bytes32 indexed nonce)',
)
/** ERC-20: emitted by the token for every transfer, an authorization's included. */
export const TRANSFER = parseAbiItem(
  'event Transfer(address indexed from, address indexed to, uint256 value)',
)

/** Blocks searched back from the head: 15 minutes of Base's 2 s blocks. */
export const DEFAULT_LOOKBACK_BLOCKS = 450n

/**
 * Seconds before `validBefore` an authorization may have landed: the service accepts one valid
 * for at most `maxTimeoutSeconds` (120 s) plus clock skew (60 s), so it was presented, and could land,
 * no earlier than this before its `validBefore`.
 */
export const DEFAULT_AUTHORIZATION_SECONDS = 300

/** Logs of one nonce read at most: nonces are random, so more than one is already an oddity. */
const MAX_LOGS = 16

/** Options of {@link createEvmJudge}. */
export interface EvmJudgeOptions {
  /** JSON-RPC URL of the chain (may carry an API key: never logged nor returned). */
  rpcUrl: string
  /** CAIP-2 networks this RPC serves, e.g. `['eip155:8453']`; its chain id is checked once. */
  networks: readonly string[]
  /** Blocks searched back from the head (default {@link DEFAULT_LOOKBACK_BLOCKS}). */
  lookbackBlocks?: bigint
  /** See {@link DEFAULT_AUTHORIZATION_SECONDS}. */
  authorizationSeconds?: number
  /** Timeout of each RPC request, in ms (default 4000). */
  timeoutMs?: number
  /**
   * The keyed hash the questions' `evm.payerKey` was made with (lowercase address in): logs whose
   * authorizer does not hash to it are another address's use of the nonce and are ignored.
   */
  payerKey?: (address: string) => string
}

/**
 * A judge of EIP-3009 `exact` settlements on EVM chains, reading the token's logs through viem:
 * - an `AuthorizationUsed` of the question's nonce whose own `Transfer` moves exactly `amount` of
 *   `asset` from its authorizer to `payTo` → `landed` (that transaction's hash). Its own transfer
 *   is the token's next log in the same transaction: FiatTokenV2_2 (USDC) marks the authorization
 *   used, emitting `AuthorizationUsed`, then transfers, emitting `Transfer`, with nothing between
 *   (`transferWithAuthorization` and `receiveWithAuthorization` alike). Any other transfer of the
 *   transaction, even one of the price to `payTo`, belongs to something else;
 * - an `AuthorizationUsed` of the question's payer (see below) whose own transfer is not that:
 *   the nonce was spent by another of the payer's authorizations, and this one can never execute
 *   → `not_landed: nonce_used` (when its own transfer cannot be read, `undecided`);
 * - `AuthorizationCanceled` with the nonce → `not_landed: canceled`;
 * - none of these, and the head block's timestamp ≥ `validBefore` (EIP-3009 requires
 *   `block.timestamp < validBefore`, and later blocks are no older) → `not_landed: expired`;
 * - otherwise `undecided` (a transaction still in the mempool has no logs yet).
 *
 * Logs are searched by nonce topic over `[head - lookbackBlocks, head]`. Nonces are the
 * authorizer's own (another address may use the same one), so a log counts for the question's
 * payer only when the question carries the payer's keyed hash (`evm.payerKey`) and the judge its
 * `payerKey`, and the log's authorizer hashes to it. Without both, every authorizer is taken for
 * the payer for `landed` (its transfer must still be the price to `payTo`) and `canceled`, and a
 * used nonce whose transfer is not ours is ignored (it may be a stranger's), which leaves it to
 * `expired`. `expired` is only said when the searched range reaches back to `validBefore -
 * authorizationSeconds` (or the genesis): asked too late, the judge stays `undecided` rather than
 * miss a landed transfer.
 *
 * Never throws: RPC failures are `undecided` with the error's name (viem's messages may hold the
 * URL, which may hold a key).
 */
export function createEvmJudge(options: EvmJudgeOptions): SettlementJudge {
  const networks = new Set(options.networks)
  const lookback = options.lookbackBlocks ?? DEFAULT_LOOKBACK_BLOCKS
  const window = options.authorizationSeconds ?? DEFAULT_AUTHORIZATION_SECONDS
  const client = createPublicClient({
    // One retry: a resolver asks again later anyway, and a dead RPC must not hold it up for long.
    transport: http(options.rpcUrl, { timeout: options.timeoutMs ?? 4_000, retryCount: 1 }),
  })
  let chainNetwork: string | undefined

  async function judge(question: SettlementQuestion): Promise<SettlementVerdict> {
    const { evm } = question
    if (!networks.has(question.network) || evm === undefined) {
      return { kind: 'undecided', why: 'not an EVM question this judge covers' }
    }
    // A verdict read from another chain would be wrong, whatever it says.
    chainNetwork ??= `eip155:${await client.getChainId()}`
    if (chainNetwork !== question.network) {
      return { kind: 'undecided', why: `the RPC serves ${chainNetwork}, not ${question.network}` }
    }
    const asset = question.asset as Address
    const head = await client.getBlock({ blockTag: 'latest' })
    const fromBlock = head.number > lookback ? head.number - lookback : 0n
    const range = { address: asset, args: { nonce: evm.nonce }, fromBlock, toBlock: head.number }
    const [used, canceled] = await Promise.all([
      client.getLogs({ ...range, event: AUTHORIZATION_USED }),
      client.getLogs({ ...range, event: AUTHORIZATION_CANCELED }),
    ])
    const payers = <L extends { args: { authorizer?: Address | undefined } }>(logs: L[]) =>
      logs.filter((log) => byPayer(log.args.authorizer, evm))
    let usedByPayer = false
    let unread = false
    for (const log of payers(used).slice(0, MAX_LOGS)) {
      const transfer = await ownTransfer(log, question)
      if (transfer === undefined) unread = true
      else if (log.transactionHash && paysUs(transfer, question)) {
        return { kind: 'landed', transaction: log.transactionHash }
      } else usedByPayer ||= bound(evm)
    }
    if (usedByPayer) return { kind: 'not_landed', reason: 'nonce_used' }
    // The payer's nonce is used, and what it paid cannot be read: never call that expired.
    if (unread && bound(evm)) return { kind: 'undecided', why: 'its transfer could not be read' }
    if (payers(canceled).length > 0) return { kind: 'not_landed', reason: 'canceled' }
    if (head.timestamp < BigInt(evm.validBefore)) {
      return { kind: 'undecided', why: 'unused and still valid' }
    }
    if (fromBlock > 0n) {
      const oldest = await client.getBlock({ blockNumber: fromBlock })
      if (oldest.timestamp > BigInt(evm.validBefore - window)) {
        return { kind: 'undecided', why: 'expired, but older than the lookback can tell' }
      }
    }
    return { kind: 'not_landed', reason: 'expired' }
  }

  /** Whether logs can be told to be the question's payer's (both sides have its keyed hash). */
  function bound(evm: NonNullable<SettlementQuestion['evm']>): boolean {
    return options.payerKey !== undefined && evm.payerKey !== undefined
  }

  /** Whether a log's authorizer is the question's payer, when both sides can tell. */
  function byPayer(
    authorizer: Address | undefined,
    evm: NonNullable<SettlementQuestion['evm']>,
  ): boolean {
    if (!options.payerKey || evm.payerKey === undefined) return true
    return authorizer !== undefined && options.payerKey(authorizer.toLowerCase()) === evm.payerKey
  }

  /**
   * The `Transfer` the token emitted with this `AuthorizationUsed`: its next log, in the same
   * transaction, from the authorizer. Read by topics in the log's block (`from` the authorizer),
   * so that the answer stays small however many transfers the block holds. Undefined when there
   * is none to read (an RPC behind the one that found the log, or a token that emits otherwise).
   */
  async function ownTransfer(used: UsedLog, question: SettlementQuestion) {
    const { blockHash, transactionHash, logIndex, args } = used
    if (blockHash === null || logIndex === null || args.authorizer === undefined) return undefined
    const transfers = await client.getLogs({
      address: question.asset as Address,
      event: TRANSFER,
      args: { from: args.authorizer },
      blockHash,
    })
    return transfers.find(
      (t) => t.transactionHash === transactionHash && t.logIndex === logIndex + 1,
    )
  }

  return neverThrowing(networks, judge)
}

/** An `AuthorizationUsed` log as viem reads it. */
type UsedLog = Log<bigint, number, false, typeof AUTHORIZATION_USED>

/** Whether a transfer moved exactly the question's `amount` to its `payTo`. */
function paysUs(
  transfer: { args: { to?: Address | undefined; value?: bigint | undefined } },
  question: SettlementQuestion,
): boolean {
  return (
    transfer.args.to !== undefined &&
    isAddressEqual(transfer.args.to, question.payTo as Address) &&
    transfer.args.value === BigInt(question.amount)
  )
}
