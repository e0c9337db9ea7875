import { createHash } from 'node:crypto'
import {
  type Address,
  address,
  type Blockhash,
  createSolanaRpc,
  getBase64Encoder,
  getTransactionDecoder,
  isAddress,
  type Signature,
} from '@solana/kit'
import { findAssociatedTokenPda, TOKEN_PROGRAM_ADDRESS } from '@solana-program/token'
import { neverThrowing } from './never-throws.js'
import type { SettlementJudge, SettlementQuestion, SettlementVerdict } from './types.js'

/** Signatures asked for per `getSignaturesForAddress` page. */
export const DEFAULT_SIGNATURES_PER_PAGE = 100
/** Pages read at most per look: 5 × 100 transactions of our payTo's token account. */
export const DEFAULT_MAX_PAGES = 5
/**
 * How far back a look reaches, in seconds of `blockTime`: a transaction lands within its
 * blockhash's lifetime (about 60 to 90 s), so 15 minutes covers any question asked within minutes
 * of the payment.
 */
export const DEFAULT_LOOKBACK_SECONDS = 900

/** Seconds our clock and the cluster's `blockTime` may disagree by. */
const CLOCK_SKEW_SECONDS = 60

const TOKEN_2022_PROGRAM_ADDRESS = address('TokenzQdBNbLqP5VEhdKAS6EPFLuvb6aYB4ELWNs7oT')

/** Transactions whose signature digests are remembered: landed transactions never change. */
const DIGEST_CACHE_SIZE = 10_000

/** Options of {@link createSolanaJudge}. */
export interface SolanaJudgeOptions {
  /** JSON-RPC URL of the cluster (may carry an API key: never logged nor returned). */
  rpcUrl: string
  /** CAIP-2 networks this RPC serves, e.g. `['solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp']`. */
  networks: readonly string[]
  /** See {@link DEFAULT_SIGNATURES_PER_PAGE} (1–1000). */
  signaturesPerPage?: number
  /** See {@link DEFAULT_MAX_PAGES}. */
  maxPages?: number
  /** See {@link DEFAULT_LOOKBACK_SECONDS}. */
  lookbackSeconds?: number
  /** Timeout of each RPC request, in ms (default 4000). */
  timeoutMs?: number
}

/** What one look through our token account's recent transactions found. */
interface Look {
  /** The transaction id, when found. */
  found?: Signature
  /** Whether it read back to the end of the history or of the lookback. */
  complete: boolean
}

/**
 * A judge of Solana `exact` settlements (an SPL `transferChecked` the payer signed, the
 * facilitator's fee payer added), reading the cluster through `@solana/kit`:
 * - a transaction that succeeded (`meta.err` null), touches payTo's associated token account for
 *   the mint, and carries a signature whose SHA-256 is the question's `payerSignatureDigest` →
 *   `landed`, with its id (its first signature, the fee payer's);
 * - not found, and the question's blockhash no longer valid (at `finalized`) → a second look (it may
 *   have landed between the first look and the check); still not found → `not_landed: expired`;
 * - otherwise `undecided`.
 *
 * A look reads `getSignaturesForAddress` of the token account newest first, at most `maxPages`
 * pages of `signaturesPerPage`, stopping at the end of its history or at a `blockTime` older than
 * `lookbackSeconds`, and `getTransaction` (base64) for each successful one not yet seen. When the
 * pages run out first (a busy payTo), the judge does not say `expired`. The matched signature
 * binds the message the payer signed, which the gate checked pays `amount` to `payTo`. A look
 * reads back to the question's `presentedAt` (less a minute) when it is older than the lookback,
 * so a question asked late is still judged right (or `undecided` when the pages run out first);
 * without `presentedAt`, a question asked more than `lookbackSeconds` after its payment landed
 * could be judged `expired`.
 *
 * The RPC's cluster is taken to be the configured network (litesvm has no genesis hash to check).
 * Never throws: RPC failures are `undecided` with the error's name, never its message (which may
 * hold the URL).
 */
export function createSolanaJudge(options: SolanaJudgeOptions): SettlementJudge {
  const networks = new Set(options.networks)
  const perPage = options.signaturesPerPage ?? DEFAULT_SIGNATURES_PER_PAGE
  const maxPages = options.maxPages ?? DEFAULT_MAX_PAGES
  const lookbackSeconds = BigInt(options.lookbackSeconds ?? DEFAULT_LOOKBACK_SECONDS)
  const timeoutMs = options.timeoutMs ?? 4_000
  const rpc = createSolanaRpc(options.rpcUrl)
  const signal = () => ({ abortSignal: AbortSignal.timeout(timeoutMs) })
  /** Signature digests of transactions already read, oldest first (bounded). */
  const digests = new Map<Signature, readonly string[]>()
  /** The token program of each mint (Token or Token-2022), which its ATA derives from. */
  const tokenPrograms = new Map<string, Address>()

  async function judge(question: SettlementQuestion): Promise<SettlementVerdict> {
    const { solana } = question
    if (!networks.has(question.network) || solana === undefined) {
      return { kind: 'undecided', why: 'not a Solana question this judge covers' }
    }
    if (!isAddress(question.payTo) || !isAddress(question.asset)) {
      return { kind: 'undecided', why: 'payTo or asset is not a Solana address' }
    }
    const account = await tokenAccount(question.payTo, question.asset)
    if (account === undefined) return { kind: 'undecided', why: 'the asset is not a token mint' }
    const since =
      question.presentedAt === undefined ? undefined : question.presentedAt - CLOCK_SKEW_SECONDS
    const first = await look(account, solana.payerSignatureDigest, since)
    if (first.found) return { kind: 'landed', transaction: first.found }
    const { value: valid } = await rpc
      .isBlockhashValid(solana.blockhash as Blockhash, { commitment: 'finalized' })
      .send(signal())
    if (valid) return { kind: 'undecided', why: 'not found, and its blockhash is still valid' }
    const second = await look(account, solana.payerSignatureDigest, since)
    if (second.found) return { kind: 'landed', transaction: second.found }
    if (!second.complete) {
      return { kind: 'undecided', why: 'expired, but more transactions than a look reads' }
    }
    return { kind: 'not_landed', reason: 'expired' }
  }

  async function tokenAccount(owner: Address, mint: Address): Promise<Address | undefined> {
    let program = tokenPrograms.get(mint)
    if (program === undefined) {
      const { value } = await rpc.getAccountInfo(mint, { encoding: 'base64' }).send(signal())
      if (value === null) return undefined
      program = value.owner
      // Anything else is not a mint: an ATA derived from it would name nothing.
      if (program !== TOKEN_PROGRAM_ADDRESS && program !== TOKEN_2022_PROGRAM_ADDRESS) {
        return undefined
      }
      if (tokenPrograms.size < 100) tokenPrograms.set(mint, program)
    }
    const [ata] = await findAssociatedTokenPda({ owner, mint, tokenProgram: program })
    return ata
  }

  /**
   * @param since - epoch seconds the look must read back to at least (the payment's
   *   `presentedAt`, less a minute of clock skew), besides the lookback
   */
  async function look(account: Address, digest: string, since?: number): Promise<Look> {
    let oldestTime = BigInt(Math.floor(Date.now() / 1000)) - lookbackSeconds
    if (since !== undefined && BigInt(since) < oldestTime) oldestTime = BigInt(since)
    let before: Signature | undefined
    for (let page = 0; page < maxPages; page++) {
      const signatures = await rpc
        .getSignaturesForAddress(account, {
          limit: perPage,
          commitment: 'confirmed',
          ...(before ? { before } : {}),
        })
        .send(signal())
      for (const entry of signatures.slice(0, perPage)) {
        // A failed transaction moved nothing; its signatures can never land again.
        if (entry.err !== null) continue
        if ((await digestsOf(entry.signature)).includes(digest))
          return { found: entry.signature, complete: true }
      }
      const last = signatures.at(-1)
      if (signatures.length < perPage || last === undefined) return { complete: true }
      if (last.blockTime !== null && last.blockTime < oldestTime) {
        return { complete: true }
      }
      before = last.signature
    }
    return { complete: false }
  }

  /** SHA-256 (hex) of each signature of a successful transaction; none if it failed or is unknown. */
  async function digestsOf(id: Signature): Promise<readonly string[]> {
    const known = digests.get(id)
    if (known) return known
    const tx = await rpc
      .getTransaction(id, {
        encoding: 'base64',
        commitment: 'confirmed',
        maxSupportedTransactionVersion: 0,
      })
      .send(signal())
    if (tx === null) return []
    const decoded = getTransactionDecoder().decode(getBase64Encoder().encode(tx.transaction[0]))
    const found =
      tx.meta?.err === null
        ? Object.values(decoded.signatures).flatMap((bytes) =>
            bytes ? [createHash('sha256').update(bytes).digest('hex')] : [],
          )
        : []
    if (digests.size >= DIGEST_CACHE_SIZE) {
      const [oldest] = digests.keys()
      if (oldest !== undefined) digests.delete(oldest)
    }
    digests.set(id, found)
    return found
  }

  return neverThrowing(networks, judge)
}
