import { describeError, logger } from '../logger.js'
import { settlementEventId } from '../telemetry/event-row.js'
import type { LedgerEntry, SettlementLedger } from '../telemetry/ledger.js'
import type { PaymentEvent } from '../telemetry/types.js'
import type { SettlementJudge, SettlementQuestion } from './types.js'

/** Default {@link ResolverOptions.intervalMs}: a pass every 10 s. */
export const RESOLVE_INTERVAL_MS = 10_000

/** Default {@link ResolverOptions.holdMs}: how long a claimed intent is held while it is judged. */
export const RESOLVE_HOLD_MS = 30_000

/** Default {@link ResolverOptions.staleMs}: an intent in doubt longer than this is reported. */
export const UNRESOLVED_STALE_MS = 5 * 60_000

/**
 * How long after a payment's validity an intent may stay undecided before it is logged as an
 * anomaly: a covering judge answers `not_landed` once the validity has passed unused, so only an
 * RPC that keeps failing leaves it undecided.
 */
export const PAST_VALIDITY_MARGIN_MS = 60_000

/** Intents claimed per batch, and judged at once within a batch. */
const BATCH = 50
const PARALLEL = 4

/** Options of {@link createSettlementResolver}; durations in milliseconds. */
export interface ResolverOptions {
  ledger: SettlementLedger
  judge: SettlementJudge
  /** CAIP-2 networks of the configured rails; those the judge covers are resolved. */
  networks: readonly string[]
  /**
   * Records the telemetry event of an outcome it decides (`settled` for a landed transfer,
   * `settle_failed` for one that never lands), named by the payment ({@link settlementEventId}).
   * Must not throw (telemetry buffers).
   */
  record: (event: PaymentEvent) => Promise<unknown>
  /** Period of the passes; default {@link RESOLVE_INTERVAL_MS}. */
  intervalMs?: number
  /** How long a claimed intent is held from other resolvers; default {@link RESOLVE_HOLD_MS}. */
  holdMs?: number
  /** Age past which an intent in doubt counts as unresolved; default {@link UNRESOLVED_STALE_MS}. */
  staleMs?: number
  /** Told after each pass how many intents are in doubt for longer than `staleMs`. */
  onUnresolved?: (count: number) => void
  /** Clock in epoch milliseconds; default `Date.now`. */
  now?: () => number
}

/** What one pass did. */
export interface ResolverPass {
  landed: number
  notLanded: number
  undecided: number
  /** Intents in doubt for longer than `staleMs` after the pass; undefined when unknown. */
  unresolved: number | undefined
}

/** The background resolver: {@link createSettlementResolver}. */
export interface SettlementResolver {
  /** Runs one pass now, then one every `intervalMs` (the timer does not hold the process). */
  start(): void
  /** One pass: claims intents in doubt, judges them, records what was decided. Never throws. */
  runOnce(): Promise<ResolverPass>
  /** Stops the timer and waits for the pass in flight. */
  stop(): Promise<void>
}

/**
 * Decides the settlements in doubt of the ledger against the chain, even when the payer never
 * comes back, so that `/stats` and the metrics follow the chain: each pass claims the intents in
 * doubt that nobody holds on the networks the judge covers (atomically in the store: one
 * resolver per intent at a time, across instances), asks the judge, and for `landed` and
 * `not_landed` records the telemetry event (under the payment's event id) and then the outcome
 * (`landed`, `not_landed`). `undecided` leaves it in doubt for the next pass (the claim expires
 * after `holdMs`); past the payment's validity plus {@link PAST_VALIDITY_MARGIN_MS} it is logged
 * once, and it stays in doubt until a judge answers: reported by `onUnresolved` (the
 * `settlements_unresolved` gauge and its alert). Intents on rails no judge covers are left to
 * the payer's retry and counted as unresolved.
 *
 * @example
 * const resolver = createSettlementResolver({ ledger, judge, networks, record: observer })
 * resolver.start()
 * await resolver.stop()
 */
export function createSettlementResolver(options: ResolverOptions): SettlementResolver {
  const { ledger, judge } = options
  const now = options.now ?? Date.now
  const holdMs = options.holdMs ?? RESOLVE_HOLD_MS
  const staleMs = options.staleMs ?? UNRESOLVED_STALE_MS
  const networks = options.networks.filter((network) => judge.covers(network))
  const overdue = new Set<string>()
  let timer: NodeJS.Timeout | undefined
  let running: Promise<ResolverPass> | undefined

  async function resolve(entry: LedgerEntry, pass: ResolverPass): Promise<void> {
    const question = parseQuestion(entry.question)
    const verdict = question
      ? await judge.judge(question)
      : ({ kind: 'undecided', why: 'no question' } as const)
    if (verdict.kind === 'undecided') {
      pass.undecided++
      if (now() > entry.expiresAt + PAST_VALIDITY_MARGIN_MS && !overdue.has(entry.key)) {
        overdue.add(entry.key)
        logger.warn(
          { network: entry.network, why: verdict.why, created_at: entry.createdAt },
          'settlement in doubt still undecided past its validity',
        )
      }
      return
    }
    const landed = verdict.kind === 'landed'
    const outcome = landed ? 'settled' : 'settle_failed'
    // The event first, then the decision: a crash between them records the event again under
    // the same id at the next pass, which the store keeps once.
    await options.record({
      tool: entry.tool,
      transport: entry.transport,
      network: entry.network,
      amount: entry.amount,
      outcome,
      id: settlementEventId(entry.key, outcome),
    })
    await ledger.decide(entry.key, {
      outcome: landed ? 'landed' : 'not_landed',
      ...(landed ? { transaction: verdict.transaction } : {}),
      at: now(),
    })
    overdue.delete(entry.key)
    if (landed) pass.landed++
    else pass.notLanded++
  }

  async function pass(): Promise<ResolverPass> {
    const result: ResolverPass = { landed: 0, notLanded: 0, undecided: 0, unresolved: undefined }
    try {
      // Each batch is claimed (held) before it is judged; a batch smaller than asked is the last.
      for (let more = networks.length > 0; more; ) {
        const batch = await ledger.claim({ now: now(), holdMs, networks, limit: BATCH })
        for (let i = 0; i < batch.length; i += PARALLEL) {
          await Promise.all(
            batch.slice(i, i + PARALLEL).map((entry) =>
              resolve(entry, result).catch((error: unknown) => {
                // Left in doubt: its claim expires and the next pass takes it again.
                logger.error({ err: describeError(error) }, 'settlement resolver: intent failed')
              }),
            ),
          )
        }
        more = batch.length === BATCH
      }
    } catch (error) {
      logger.error({ err: describeError(error) }, 'settlement resolver pass failed')
    }
    try {
      result.unresolved = await ledger.unresolved(now() - staleMs)
      options.onUnresolved?.(result.unresolved)
    } catch (error) {
      logger.warn({ err: describeError(error) }, 'settlement resolver: unresolved count failed')
    }
    if (result.landed + result.notLanded > 0) {
      logger.info(
        { landed: result.landed, not_landed: result.notLanded, undecided: result.undecided },
        'settlements in doubt resolved on chain',
      )
    }
    return result
  }

  function runOnce(): Promise<ResolverPass> {
    running ??= pass().finally(() => {
      running = undefined
    })
    return running
  }

  return {
    start() {
      if (timer) return
      void runOnce()
      timer = setInterval(() => void runOnce(), options.intervalMs ?? RESOLVE_INTERVAL_MS)
      timer.unref()
    },
    runOnce,
    async stop() {
      clearInterval(timer)
      timer = undefined
      await running
    },
  }
}

/** The stored question, or undefined when there is none or it cannot be read. */
function parseQuestion(json: string | null): SettlementQuestion | undefined {
  if (!json) return undefined
  try {
    const question = JSON.parse(json) as SettlementQuestion
    return typeof question?.network === 'string' ? question : undefined
  } catch {
    return undefined
  }
}
