import { describeError, logger } from '../logger.js'
import type { PaidContext } from './call.js'
import type { CallFingerprint, ClaimResult, GuardRecord, SettlementGuard } from './guard.js'

/**
 * Claims every key of a call, in order (its `payment-identifier` id first, then its payment); on
 * the first key already held, frees those it claimed and returns the holder's record.
 *
 * @param keys - the call's guard keys
 * @param record - the `pending` record to store under each
 * @returns undefined when every key is now the call's, else the key held and its record
 * @throws {GuardUnavailableError} the shared guard is unreachable (those claimed are freed)
 */
export async function claimAll(
  guard: SettlementGuard,
  keys: readonly string[],
  record: GuardRecord,
): Promise<{ key: string; record: GuardRecord } | undefined> {
  const claimed: string[] = []
  const freeClaimed = () =>
    Promise.all(claimed.map((k) => quietly('release', () => guard.release(k))))
  for (const key of keys) {
    let answer: ClaimResult
    try {
      answer = await guard.claim(key, record)
    } catch (error) {
      await freeClaimed()
      throw error
    }
    if (answer.state === 'claimed') {
      claimed.push(key)
      continue
    }
    await freeClaimed()
    return { key, record: answer.record }
  }
  return undefined
}

/**
 * Runs a guard write whose failure must not change the call's answer (the record expires with
 * its window).
 */
export async function quietly(what: string, write: () => Promise<void>): Promise<void> {
  try {
    await write()
  } catch (error) {
    logger.error({ err: describeError(error), op: what }, 'guard write failed')
  }
}

/** The guard records of one call, written under all of its keys at once. */
export interface CallRecords {
  /**
   * Writes `record` under every key of the call (failures logged, see {@link quietly}): the
   * payment's own key for `retentionMs` (how long the payment could still be presented), its id
   * for the window.
   */
  put(record: GuardRecord): Promise<void>
  /** Frees every key of the call. */
  release(): Promise<void>
}

/**
 * The writes of one call's records.
 *
 * @param retention - the payment's own key and how long to keep it, in milliseconds
 * @example const records = callRecords(guard, ['id:pay_…', 'pay:5f1c…'], { key: 'pay:5f1c…', ms: 300_000 })
 */
export function callRecords(
  guard: SettlementGuard,
  keys: readonly string[],
  retention: { key: string; ms: number },
): CallRecords {
  return {
    put: async (record) => {
      await Promise.all(
        keys.map((k) =>
          quietly('put', () =>
            k === retention.key ? guard.put(k, record, retention.ms) : guard.put(k, record),
          ),
        ),
      )
    },
    release: async () => {
      await Promise.all(keys.map((k) => quietly('release', () => guard.release(k))))
    },
  }
}

/** A `pending` record of a call. */
export function pendingRecord(
  call: CallFingerprint,
  identity: { key: string; proof: string },
): GuardRecord {
  return { state: 'pending', call, payment: identity.key, proof: identity.proof }
}

/**
 * The claim step: claims every key of the call for it (its `payment-identifier` id, then its
 * payment's own key); when all are its own, its outcome holds them (freed at the exit unless the
 * payment was sent to settlement).
 *
 * @returns undefined when the call holds its keys, else the key held and the record holding it
 * @throws {GuardUnavailableError} the shared guard is unreachable
 * @example const held = await claimCall(parts.guard, ctx)
 */
export async function claimCall(
  guard: SettlementGuard,
  ctx: PaidContext,
): Promise<{ key: string; record: GuardRecord } | undefined> {
  const held = await claimAll(guard, ctx.keys, pendingRecord(ctx.fp, ctx.presented.identity))
  if (!held) {
    ctx.outcome.claim = callRecords(guard, ctx.keys, {
      key: ctx.presented.identity.key,
      ms: ctx.retentionMs,
    })
  }
  return held
}
