import {
  type Address,
  createPublicClient,
  erc20Abi,
  type Hash,
  type Hex,
  http,
  isAddressEqual,
  parseAbiItem,
  parseEventLogs,
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
 * - `AuthorizationUsed` with the question's nonce, in a transaction whose receipt holds an ERC-20
 *   `Transfer` of `asset` to `payTo` of exactly `amount` → `landed` (that transaction's hash);
 * - `AuthorizationCanceled` with the nonce → `not_landed: canceled`;
 * - neither, and the head block's timestamp ≥ `validBefore` (EIP-3009 requires
 *   `block.timestamp < validBefore`, and later blocks are no older) → `not_landed: expired`;
 * - otherwise `undecided`.
 *
 * Logs are searched by nonce topic only (the authorizer is the payer, whom we do not keep), over
 * `[head - lookbackBlocks, head]`. An `AuthorizationUsed` whose transaction pays someone else or
 * another amount is someone else's authorization that happened to reuse the nonce: it is not ours,
 * so it proves nothing about our payer's and is ignored (the judge goes on to cancellation and
 * expiry). A cancellation cannot be told apart the same way (it names no transfer) and is taken as
 * the payer's, unless the question carries the payer's keyed hash (`evm.payerKey`) and the judge
 * its `payerKey`: then only logs whose authorizer is that payer count. `expired` is only said when the searched range reaches back to
 * `validBefore - authorizationSeconds` (or the genesis): asked too late, the judge stays
 * `undecided` rather than miss a landed transfer.
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
    for (const log of payers(used).slice(0, MAX_LOGS)) {
      if (log.transactionHash && (await paysUs(log.transactionHash, question))) {
        return { kind: 'landed', transaction: log.transactionHash }
      }
    }
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

  /** Whether a log's authorizer is the question's payer, when both sides can tell. */
  function byPayer(
    authorizer: Address | undefined,
    evm: NonNullable<SettlementQuestion['evm']>,
  ): boolean {
    if (!options.payerKey || evm.payerKey === undefined) return true
    return authorizer !== undefined && options.payerKey(authorizer.toLowerCase()) === evm.payerKey
  }

  /** Whether the transaction moved exactly `amount` of `asset` to `payTo`. */
  async function paysUs(hash: Hash, question: SettlementQuestion): Promise<boolean> {
    const receipt = await client.getTransactionReceipt({ hash })
    if (receipt.status !== 'success') return false
    const transfers = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs })
    return transfers.some(
      (t) =>
        isAddressEqual(t.address, question.asset as Hex) &&
        isAddressEqual(t.args.to, question.payTo as Hex) &&
        t.args.value === BigInt(question.amount),
    )
  }

  return neverThrowing(networks, judge)
}
