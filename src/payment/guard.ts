import { createHash } from 'node:crypto'
import type { PaymentPayload } from '@x402/core/types'
import canonicalize from 'canonicalize'

/**
 * How long a payment payload stays claimed after its last settlement attempt, in milliseconds.
 * About twice the Solana blockhash lifetime (exact SVM scheme, "Duplicate Settlement Mitigation"):
 * after it, the transaction cannot land on-chain, and an EIP-3009 nonce is spent on-chain anyway.
 */
export const DUPLICATE_WINDOW_MS = 120_000

/**
 * Duplicate-settlement guard: refuses to settle a payment payload that is already being settled
 * or was settled within {@link DUPLICATE_WINDOW_MS}, on either rail.
 *
 * Implementations must make `claim` atomic across every instance that shares them (the in-memory
 * one is atomic within one process).
 */
export interface SettlementGuard {
  /**
   * Claims a payment key for settlement.
   *
   * @param key - from {@link paymentKey}
   * @returns true if the key was free and is now held; false if it is held or recently settled
   */
  claim(key: string): Promise<boolean>
  /** Frees a key whose payment was never sent to settle (verify failed, tool failed). */
  release(key: string): Promise<void>
  /** Keeps a key held for the duplicate window from now (called after any settle attempt). */
  hold(key: string): Promise<void>
}

/**
 * A stable key for a payment payload: SHA-256 (hex) of the RFC 8785 canonical JSON of its
 * scheme-specific `payload` (the EVM signature + authorization, or the SVM transaction).
 *
 * @example
 * paymentKey({ x402Version: 2, accepted, payload: { transaction: 'AQAB…' } }) // '5f1c…'
 */
export function paymentKey(payment: PaymentPayload): string {
  const canonical = canonicalize(payment.payload) ?? ''
  return createHash('sha256').update(canonical).digest('hex')
}

/**
 * The default guard: an in-process map with time-based eviction.
 *
 * @param now - clock in epoch milliseconds (injected by tests)
 */
export function createMemoryGuard(now: () => number = Date.now): SettlementGuard {
  const heldUntil = new Map<string, number>()
  let lastSweep = 0
  const sweep = (t: number) => {
    // At most once a second, so a claim stays O(1) amortised under load.
    if (t - lastSweep < 1000) return
    lastSweep = t
    for (const [key, until] of heldUntil) if (until <= t) heldUntil.delete(key)
  }
  return {
    async claim(key) {
      const t = now()
      sweep(t)
      const until = heldUntil.get(key)
      if (until !== undefined && until > t) return false
      heldUntil.set(key, t + DUPLICATE_WINDOW_MS)
      return true
    },
    async release(key) {
      heldUntil.delete(key)
    },
    async hold(key) {
      heldUntil.set(key, now() + DUPLICATE_WINDOW_MS)
    },
  }
}
