import type { SettleResponse } from '@x402/core/types'

/**
 * How long a claim lives, and the shortest time a settled or spent payment stays on record, in
 * milliseconds (about twice the Solana blockhash lifetime: exact SVM scheme, "Duplicate Settlement
 * Mitigation"); a payment that could be presented for longer is kept longer (the `ttlMs` of
 * {@link SettlementGuard.put}). It is also how long a `payment-identifier` id stays its payer's.
 */
export const DUPLICATE_WINDOW_MS = 120_000

/**
 * What one paid call is about, without its contents: the tool id and the SHA-256 (hex) of the
 * RFC 8785 canonical JSON of its checked input (`CheckedInput.digest`, made by the input check
 * on a worker). Two calls with the same fingerprint get the same result (the tools are
 * deterministic), so a replay may recompute it.
 */
export interface CallFingerprint {
  tool: string
  /** SHA-256 hex of the RFC 8785 form of the checked input. */
  inputDigest: string
}

/** The states of a guard record; see {@link GuardRecord}. */
export type GuardState = 'pending' | 'settled' | 'spent' | 'unknown'

/**
 * What the guard holds under a key, for at most {@link DUPLICATE_WINDOW_MS}. It never holds the
 * input, the result or the payer address.
 * - `pending`: a call holds the key (verify, run or settle in progress);
 * - `settled`: the call settled; its fingerprint and SettleResponse allow a replay;
 * - `spent`: a settlement was attempted and failed: the payment must not be used again within
 *   the window;
 * - `unknown`: a settlement was sent and its outcome is unknown (timeout, a facilitator failure
 *   after it received the request, a refusal while the chain may still decide it): a retry of
 *   the same payment after `retryAt` may settle it again ({@link SettlementGuard.reclaim}).
 */
export interface GuardRecord {
  state: GuardState
  call: CallFingerprint
  /** `PaymentIdentity.key` of the payment that holds the key (for an id key: the one that paid). */
  payment: string
  /** `PaymentIdentity.proof` of that payment. */
  proof: string
  /** Keyed hash of the payer (HMAC-SHA-256 under the telemetry salt), once verified. */
  payer?: string
  /** The SettleResponse of a `settled` record, without `payer`. */
  settlement?: SettleResponse
  /**
   * An `unknown` record: the epoch milliseconds its payer was told to retry after (Retry-After).
   * A retry before then is answered from this record: nothing runs, nobody is asked (but the
   * chain judge once, see `judged`).
   */
  retryAt?: number
  /**
   * An `unknown` record whose payment the chain judge was asked about, and could not decide, since
   * its `retryAt` was set: a retry before `retryAt` does not ask it again.
   */
  judged?: true
}

/** The answer of {@link SettlementGuard.claim}: `claimed`, or the record that holds the key. */
export type ClaimResult = { state: 'claimed' } | { state: 'held'; record: GuardRecord }

/**
 * Duplicate-settlement guard and idempotency record: one payment is settled at most once, and a
 * settled call can be replayed (same payment or the payer's own id, same fingerprint) a bounded
 * number of times within {@link DUPLICATE_WINDOW_MS}.
 *
 * Implementations make `claim`, `countReplay` and `reclaim` atomic across every instance that
 * shares them: the in-memory one within one process ({@link createMemoryGuard}), the Redis one
 * across instances (`createRedisGuard`). Every method of a shared implementation rejects with
 * `GuardUnavailableError` when its store is unreachable.
 */
export interface SettlementGuard {
  /**
   * Claims a key for one paid call.
   *
   * @param key - a `PaymentIdentity.key` or an {@link idempotencyKey}
   * @param record - the `pending` record to store if the key is free
   * @returns `{state: 'claimed'}` if the key was free and now holds `record`, else the record
   *   that holds it
   * @throws {GuardUnavailableError} the shared store is unreachable
   */
  claim(key: string, record: GuardRecord): Promise<ClaimResult>
  /**
   * Stores `record` under `key` (the call's later states) for `ttlMs` from now, at least
   * {@link DUPLICATE_WINDOW_MS} (the default).
   */
  put(key: string, record: GuardRecord, ttlMs?: number): Promise<void>
  /**
   * Reads the record held under `key`, if any, without claiming it: whether a payment is already
   * known (pending, settled, spent, in doubt) before its call earns the paid lane.
   *
   * @throws {GuardUnavailableError} the shared store is unreachable
   */
  peek(key: string): Promise<GuardRecord | undefined>
  /** Frees a key whose payment was never sent to settle (verify failed, tool failed). */
  release(key: string): Promise<void>
  /**
   * Counts one replay of the settled payment `payment` (a `PaymentIdentity.key`), whichever key
   * (its own or an id) led to it. The count lives `ttlMs` from the first replay (at least
   * {@link DUPLICATE_WINDOW_MS}), so it outlives the payment's record: a payment is answered at most
   * 1 + REPLAY_LIMIT times in all.
   *
   * @returns the replays counted so far, this one included
   */
  countReplay(payment: string, ttlMs?: number): Promise<number>
  /**
   * Takes an `unknown` record back for a retry of its settlement: replaces it by `next` only if it
   * is still `unknown` with the same proof, so that two retries cannot both settle.
   *
   * @returns whether `next` replaced it
   */
  reclaim(key: string, proof: string, next: GuardRecord): Promise<boolean>
  /** Closes what the guard opened (nothing for the memory guard). */
  close?(): Promise<void>
}

/**
 * The key of a client's payment identifier (x402 `payment-identifier` extension, 16 to 128
 * characters of `[A-Za-z0-9_-]`). One key for every rail; the record says which payment and
 * which payer it belongs to, so that only that payer can replay with it. (Services sharing one
 * Redis are kept apart by the guard's key prefix.)
 *
 * @example idempotencyKey('pay_7d5d747be160e280') // 'id:pay_7d5d747be160e280'
 */
export function idempotencyKey(id: string): string {
  return `id:${id}`
}

/** Whether two fingerprints describe the same call. */
export function sameCall(a: CallFingerprint, b: CallFingerprint): boolean {
  return a.tool === b.tool && a.inputDigest === b.inputDigest
}

/**
 * The single-instance guard: in-process maps with time-based eviction. Its size is bounded by
 * the calls of the longest retention: expired entries are swept at most once a second, so every
 * operation stays O(1) amortised.
 *
 * @param now - clock in epoch milliseconds (injected by tests)
 */
export function createMemoryGuard(now: () => number = Date.now): SettlementGuard & {
  /** Entries currently held, expired or not (for the bound's benchmark and tests). */
  size(): number
} {
  const records = new Map<string, { record: GuardRecord; until: number }>()
  const replays = new Map<string, { count: number; until: number }>()
  let lastSweep = 0
  const sweep = (t: number) => {
    if (t - lastSweep < 1000) return
    lastSweep = t
    for (const [key, { until }] of records) if (until <= t) records.delete(key)
    for (const [key, { until }] of replays) if (until <= t) replays.delete(key)
  }
  const held = (key: string, t: number) => {
    const entry = records.get(key)
    return entry && entry.until > t ? entry.record : undefined
  }
  const put = (key: string, record: GuardRecord, ttlMs = DUPLICATE_WINDOW_MS) =>
    records.set(key, { record, until: now() + Math.max(DUPLICATE_WINDOW_MS, ttlMs) })
  return {
    async claim(key, record) {
      const t = now()
      sweep(t)
      const holder = held(key, t)
      if (holder) return { state: 'held', record: holder }
      put(key, record)
      return { state: 'claimed' }
    },
    async put(key, record, ttlMs) {
      put(key, record, ttlMs)
    },
    async peek(key) {
      return held(key, now())
    },
    async release(key) {
      records.delete(key)
    },
    async countReplay(payment, ttlMs = DUPLICATE_WINDOW_MS) {
      const t = now()
      sweep(t)
      const entry = replays.get(payment)
      if (entry && entry.until > t) return ++entry.count
      replays.set(payment, { count: 1, until: t + Math.max(DUPLICATE_WINDOW_MS, ttlMs) })
      return 1
    },
    async reclaim(key, proof, next) {
      const holder = held(key, now())
      if (holder?.state !== 'unknown' || holder.proof !== proof) return false
      put(key, next)
      return true
    },
    size: () => records.size + replays.size,
  }
}
