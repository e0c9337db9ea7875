import { createHash } from 'node:crypto'
import type { PaymentPayload, SettleResponse } from '@x402/core/types'
import canonicalize from 'canonicalize'

/**
 * How long a claim lives, and how long a settled or spent payment stays on record, in
 * milliseconds. About twice the Solana blockhash lifetime (exact SVM scheme, "Duplicate
 * Settlement Mitigation"): after it, the transaction cannot land on-chain, and an EIP-3009 nonce
 * is spent on-chain anyway. It is also the window of idempotent replays.
 */
export const DUPLICATE_WINDOW_MS = 120_000

/**
 * What one paid call is about, without its contents: the tool id and the SHA-256 (hex) of the
 * RFC 8785 canonical JSON of its parsed input. Two calls with the same fingerprint get the same
 * result (the tools are deterministic), so a replay may recompute it.
 */
export interface CallFingerprint {
  tool: string
  /** SHA-256 hex of the RFC 8785 form of the parsed input. */
  inputDigest: string
}

/**
 * What the guard holds under a key, for at most {@link DUPLICATE_WINDOW_MS}. It never holds the
 * input, the result or the payer address.
 * - `pending`: a call holds the key (verify, run or settle in progress);
 * - `settled`: the call settled; its fingerprint and SettleResponse allow a replay;
 * - `spent`: a settlement was attempted and did not give a result (failed, or its outcome is
 *   unknown): the payment must not be used again within the window.
 */
export type GuardRecord =
  | { state: 'pending'; call: CallFingerprint }
  | { state: 'settled'; call: CallFingerprint; settlement: SettleResponse }
  | { state: 'spent'; call: CallFingerprint }

/** The answer of {@link SettlementGuard.claim}: `claimed`, or the record that holds the key. */
export type ClaimResult = { state: 'claimed' } | GuardRecord

/**
 * Duplicate-settlement guard and idempotency record: one payment is settled at most once, and a
 * settled call can be replayed (same key, same fingerprint) within {@link DUPLICATE_WINDOW_MS}.
 *
 * Implementations make `claim` atomic across every instance that shares them: the in-memory one
 * within one process ({@link createMemoryGuard}), the Redis one across instances
 * (`createRedisGuard`, `SET NX PX`). Every method of a shared implementation rejects with
 * {@link GuardUnavailableError} when its store is unreachable.
 */
export interface SettlementGuard {
  /**
   * Claims a key for one paid call.
   *
   * @param key - from {@link paymentKey} or {@link idempotencyKey}
   * @param call - what the call is about (stored with the claim)
   * @returns `{state: 'claimed'}` if the key was free and is now `pending` for this call, else
   *   the record that holds it
   * @throws {GuardUnavailableError} the shared store is unreachable
   */
  claim(key: string, call: CallFingerprint): Promise<ClaimResult>
  /** Frees a key whose payment was never sent to settle (verify failed, tool failed). */
  release(key: string): Promise<void>
  /** Marks a key `spent` for the window from now (a settle attempt that gave no result). */
  spend(key: string, call: CallFingerprint): Promise<void>
  /** Records a settled call for the window from now, for replays. */
  settle(key: string, call: CallFingerprint, settlement: SettleResponse): Promise<void>
  /** Closes what the guard opened (nothing for the memory guard). */
  close?(): Promise<void>
}

/**
 * A stable key for a payment payload: SHA-256 (hex) of the RFC 8785 canonical JSON of its
 * scheme-specific `payload` (the EVM signature + authorization, or the SVM transaction).
 *
 * @example
 * paymentKey({ x402Version: 2, accepted, payload: { transaction: 'AQAB…' } }) // 'pay:5f1c…'
 */
export function paymentKey(payment: PaymentPayload): string {
  const canonical = canonicalize(payment.payload) ?? ''
  return `pay:${createHash('sha256').update(canonical).digest('hex')}`
}

/**
 * The key of a client's payment identifier (x402 `payment-identifier` extension, 16 to 128
 * characters of `[A-Za-z0-9_-]`). One key for every rail: a retry re-signed on the other rail
 * with the same id is a replay too, never a second charge. (Services sharing one Redis are kept
 * apart by the guard's key prefix.)
 *
 * @example idempotencyKey('pay_7d5d747be160e280') // 'id:pay_7d5d747be160e280'
 */
export function idempotencyKey(id: string): string {
  return `id:${id}`
}

/**
 * The fingerprint of a call: tool id and SHA-256 of the RFC 8785 form of its parsed input.
 *
 * @example fingerprint('hash', { input: 'abc' }) // { tool: 'hash', inputDigest: '8f0c…' }
 */
export function fingerprint(tool: string, input: unknown): CallFingerprint {
  const canonical = canonicalize(input) ?? ''
  return { tool, inputDigest: createHash('sha256').update(canonical).digest('hex') }
}

/** Whether two fingerprints describe the same call. */
export function sameCall(a: CallFingerprint, b: CallFingerprint): boolean {
  return a.tool === b.tool && a.inputDigest === b.inputDigest
}

/**
 * The single-instance guard: an in-process map with time-based eviction. Its size is bounded by
 * the calls of one window ({@link DUPLICATE_WINDOW_MS}): expired records are swept at most once
 * a second, so a claim stays O(1) amortised.
 *
 * @param now - clock in epoch milliseconds (injected by tests)
 */
export function createMemoryGuard(now: () => number = Date.now): SettlementGuard & {
  /** Records currently held, expired or not (for the bound's benchmark and tests). */
  size(): number
} {
  const records = new Map<string, { record: GuardRecord; until: number }>()
  let lastSweep = 0
  const sweep = (t: number) => {
    if (t - lastSweep < 1000) return
    lastSweep = t
    for (const [key, { until }] of records) if (until <= t) records.delete(key)
  }
  const put = (key: string, record: GuardRecord) =>
    records.set(key, { record, until: now() + DUPLICATE_WINDOW_MS })
  return {
    async claim(key, call) {
      const t = now()
      sweep(t)
      const held = records.get(key)
      if (held && held.until > t) return held.record
      put(key, { state: 'pending', call })
      return { state: 'claimed' }
    },
    async release(key) {
      records.delete(key)
    },
    async spend(key, call) {
      put(key, { state: 'spent', call })
    },
    async settle(key, call, settlement) {
      put(key, { state: 'settled', call, settlement })
    },
    size: () => records.size,
  }
}
