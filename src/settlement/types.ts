import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'

/**
 * What the chain is asked about one settlement in doubt, without the payer's address or the
 * payment's contents: enough to find the transfer on chain, and safe to keep in the settlement
 * ledger (docs/security.md: never store a payer address or a payload).
 */
export interface SettlementQuestion {
  /** CAIP-2 network of the rail, e.g. `eip155:8453`. */
  network: string
  /** The token (EVM: ERC-20 contract address; Solana: mint). */
  asset: string
  /** Our payTo on that rail (EVM address; Solana owner address). */
  payTo: string
  /** The price, in atomic USDC, as a decimal string. */
  amount: string
  /**
   * When the payment was presented (its question built), in epoch seconds; optional. It cannot
   * have landed before: the Solana judge reads its token account's history back to at least this
   * time before it says `expired`, however late it is asked.
   */
  presentedAt?: number
  /** EIP-3009 `transferWithAuthorization`: found by its nonce (`AuthorizationUsed` logs). */
  evm?: {
    /** The authorization's nonce, 0x-prefixed 32 bytes. */
    nonce: `0x${string}`
    /** The authorization's `validBefore`, in epoch seconds: unused after it, it can never land. */
    validBefore: number
    /**
     * The payer's keyed hash (the service's `payerHash`, HMAC-SHA-256 under TELEMETRY_SALT, as
     * telemetry keeps payers): a log of this nonce counts only when its `authorizer` hashes to
     * it, so another address using the same nonce proves nothing about this payment.
     */
    payerKey?: string
  }
  /**
   * SPL `transferChecked` signed by the payer, fee payer added by the facilitator (whose
   * signature is the transaction id, which we never see).
   */
  solana?: {
    /** SHA-256 (hex) of the payer's signature in the transaction: matched against candidates. */
    payerSignatureDigest: string
    /** The transaction's recent blockhash: once it is no longer valid, it can never land. */
    blockhash: string
  }
}

/**
 * Why a settlement in doubt can never land:
 * - `canceled`: the payer canceled the authorization (EIP-3009 `AuthorizationCanceled`);
 * - `expired`: unused past its `validBefore` (EVM), or its blockhash expired without it (Solana);
 * - `nonce_used`: the payer's nonce was used by another of its authorizations (another amount or
 *   recipient: its `AuthorizationUsed` came with a transfer that is not this payment's), so this
 *   one can never execute.
 */
export type NotLandedReason = 'canceled' | 'expired' | 'nonce_used'

/**
 * What the chain says of a settlement in doubt:
 * - `landed`: this payment's own transfer (EVM: the `Transfer` its `AuthorizationUsed` came with;
 *   Solana: the transaction the payer signed) moved the price to our payTo, in `transaction`;
 * - `not_landed`: it can never land ({@link NotLandedReason}): nothing was charged for it;
 * - `undecided`: not yet known (still valid and unused, a transaction still pending, or the RPC
 *   could not answer): ask again.
 */
export type SettlementVerdict =
  | { kind: 'landed'; transaction: string }
  | { kind: 'not_landed'; reason: NotLandedReason }
  | { kind: 'undecided'; why: string }

/** Reads the chain of one rail or several to judge settlements in doubt. Never throws. */
export interface SettlementJudge {
  /** True when this judge can read the chain of `network` (its RPC URL is configured). */
  covers(network: string): boolean
  judge(question: SettlementQuestion): Promise<SettlementVerdict>
}

/** Builds the question for a presented payment and the requirements it matched. */
export type QuestionOf = (
  payment: PaymentPayload,
  requirements: PaymentRequirements,
) => SettlementQuestion | undefined
