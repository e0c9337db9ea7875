import type { ResourceInfo, SettleResponse } from '@x402/core/types'
import { describeError, logger } from '../logger.js'
import type { Receipts } from '../receipts/index.js'
import type { CheckedInput } from '../runner/check.js'
import { CheckTimeoutError, OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import type { JsonResult } from '../runner/json-result.js'
import type { Admission, InputSource, ToolRunner } from '../runner/runner.js'
import type { CheckOutcome } from '../runner/task.js'
import { systemEnv, type ToolDefinition, type ToolEnv, ToolError } from '../tools/types.js'
import { type CallRecords, callRecords, claimAll, pendingRecord } from './claim.js'
import {
  FacilitatorUnavailableError,
  type InputCheck,
  InvalidInputError,
  InvalidJsonError,
  PaymentConflictError,
  PaymentIdentifierConflictError,
  PaymentInProgressError,
  PaymentRequiredError,
  SettlementUnknownError,
  ShuttingDownError,
} from './errors.js'
import type { FacilitatorLink, LiveState } from './facilitator.js'
import {
  type CallFingerprint,
  DUPLICATE_WINDOW_MS,
  type GuardRecord,
  idempotencyKey,
  type SettlementGuard,
  sameCall,
} from './guard.js'
import { createOffers, type Offer } from './offer.js'
import { CLOCK_SKEW_SECONDS } from './payment-shape.js'
import { type PaymentSource, type PresentedPayment, readPayment } from './presented.js'
import { type ClientQuota, requestPoints } from './quota.js'
import { withReceipt } from './receipt.js'
import { settlePayment } from './settle.js'
import { verifyPayment } from './verify.js'

export { MAX_PAYMENT_BYTES } from './presented.js'
export type { ClientQuota } from './quota.js'

/** Default {@link PaymentGateOptions.replayLimit} (`REPLAY_LIMIT`). */
export const DEFAULT_REPLAY_LIMIT = 3

/** Outcome of a verified paid call, as recorded by telemetry. */
export type PaymentOutcome = 'verified' | 'settled' | 'settle_failed' | 'tool_failed_unsettled'

/**
 * A payment event: emitted with `verified` after a successful verify, then exactly one of
 * `settled`, `settle_failed` or `tool_failed_unsettled`. `payer` is the raw address: observers
 * must hash it before it is stored anywhere.
 */
export interface PaymentEvent {
  tool: string
  transport: 'http' | 'mcp'
  /** CAIP-2 network of the rail used. */
  network: string
  /** Atomic USDC units. */
  amount: string
  outcome: PaymentOutcome
  payer?: string
}

/**
 * Receives payment events, in the order they happen. A `settled` event is awaited before the result
 * is released; a `verified` event is not awaited (the tool runs meanwhile): it is recorded before
 * the outcome that follows it, and its write, one commit of the telemetry store, added a commit's
 * latency to every paid call (bench/README.md, "Paid calls against the peer").
 */
export type PaymentObserver = (event: PaymentEvent) => Promise<void>

/**
 * What became of a paid request that is not a payment event (for operators' metrics):
 * - `refused`: refused before verify (`code` is the answer's error code);
 * - `verify_failed`: the facilitator rejected the payment;
 * - `replayed`: a settled call answered again, nothing settled;
 * - `settle_unknown`: the settlement's outcome is unknown (503 `settlement_unknown`).
 */
export interface PaymentNote {
  tool: string
  transport: 'http' | 'mcp'
  /** CAIP-2 network of the rail, when the payment matched one. */
  network?: string
  outcome: 'refused' | 'verify_failed' | 'replayed' | 'settle_unknown'
  /** The error code of a refusal, or the facilitator's reason of a failed verify. */
  code?: string
}

/** One paid tool call, from either transport. */
export interface PaidCall {
  tool: ToolDefinition
  transport: 'http' | 'mcp'
  /**
   * Where the input comes from (the raw body, checked on a worker); absent when the request has
   * no body at all.
   */
  source?: InputSource
  /** The presented payment, as its transport carries it, not yet read; absent when none. */
  payment?: PaymentSource
  /**
   * Rate-limit points the transport already took for this request's bytes (MCP charges its body
   * before reading it); absent: the gate charges a paid call's body itself, before any work.
   */
  prepaid?: number
  /** `resource` of the PaymentRequired (url is the public endpoint URL or the MCP endpoint URL). */
  resource: ResourceInfo
  /** PaymentRequired extensions (bazaar discovery info). */
  extensions?: Record<string, unknown>
  /** The caller's rate-limit account; absent: no rate limit. */
  quota?: ClientQuota
}

/**
 * A settled call: the tool result (JSON made by the worker, with the SHA-256 of its RFC 8785
 * form) and the facilitator's SettleResponse. `replayed`: the call repeats one that settled
 * within the window (the same payment, or the payer's own `payment-identifier` id, same tool and
 * input): the result was recomputed, nothing was settled again, and `settlement` is the original
 * SettleResponse (without `payer`, which the guard does not keep).
 */
export interface PaidResult {
  result: JsonResult
  /** The SettleResponse, with the signed delivery receipt in its `extensions` (with `receipts`). */
  settlement: SettleResponse
  /** Lower-case hex SHA-256 of the RFC 8785 form of the checked input. */
  inputDigest: string
  /** The tools' clock the result was computed with, in Unix seconds (the receipt's `iat`). */
  nowSeconds: number
  replayed?: true
}

/**
 * The payment gate: the rules of a paid call, written once for HTTP and MCP, in this order
 * (the life of a paid call, as the design document tells it):
 *
 * 1. offer: no payment -> {@link PaymentRequiredError} `payment_required` (every live rail, plus
 *    the free input check when a body came with it);
 * 2. the payment is read without the facilitator (presented.ts) and the input checked on a worker
 *    (runner.check) -> `invalid_payment`, or a 400 (`invalid_json`, `invalid_request`, a tool's
 *    shape code), and the facilitator is never called; the runner admits the call when its pool
 *    has room -> {@link OverloadedError};
 * 3. the guard claims the payment under its canonical key (the authorization, not its spelling:
 *    payment-key.ts) and its `payment-identifier` id (claim.ts). A held key -> {@link onHeld}:
 *    replays only for its own payer, at most `replayLimit` times, each charged to the client's
 *    quota before it runs; 409 `payment_in_progress`, 409 `payment_identifier_conflict` (the
 *    same whatever the input) or 402 `duplicate_settlement` otherwise;
 * 4. verify with the facilitator (verify.ts) -> unreachable: {@link FacilitatorUnavailableError};
 * 5. run the tool on a worker under its time budget -> a {@link ToolError},
 *    {@link ToolTimeoutError} or {@link OverloadedError} is rethrown and nothing is settled;
 * 6. settle (settle.ts) -> failed: `settlement_failed`, the result withheld; outcome unknown:
 *    {@link SettlementUnknownError}, the payment held for a retry; while the service shuts down, a
 *    settlement that could not finish before its deadline is not started;
 * 7. the `settled` telemetry event is awaited;
 * 8. the result is released with the SettleResponse, which carries the signed delivery receipt
 *    (receipt.ts; with `receipts`).
 */
export interface PaymentGate {
  /**
   * Runs a paid call.
   *
   * @throws {PaymentRequiredError} 402 cases
   * @throws {InvalidJsonError} a paid HTTP call without a JSON body
   * @throws {InvalidInputError} input does not match the tool's schema
   * @throws {ToolError} the tool refused the input (never settled)
   * @throws {ToolTimeoutError} the tool ran out of its time budget (never settled)
   * @throws {OverloadedError} no capacity: refused before verify, or verified but not run within
   *   the queue deadline (never settled)
   * @throws {FacilitatorUnavailableError} fail-closed 503
   * @throws {SettlementUnknownError} the settlement's outcome is unknown (503)
   * @throws {ShuttingDownError} the service is shutting down; nothing was charged
   * @throws {PaymentInProgressError} the same payment is being processed by another request
   * @throws {PaymentIdentifierConflictError} the id belongs to another payment's payer
   * @throws {GuardUnavailableError} the shared guard (Redis) is unreachable; nothing was charged
   * @throws the quota's refusal (429) when a charged request is over the client's limit
   */
  execute(call: PaidCall): Promise<PaidResult>
  link: FacilitatorLink
  /** The tool runner (its options are published as limits). */
  runner: ToolRunner
}

/** Options of {@link createPaymentGate}. */
export interface PaymentGateOptions {
  link: FacilitatorLink
  guard: SettlementGuard
  /** Runs the tools (worker threads, time budget, admission) and checks their inputs. */
  runner: ToolRunner
  /**
   * The keyed hash of a payer address that guard records keep (HMAC-SHA-256 under the telemetry
   * salt, shared by every instance), so that only its payer can replay a settled call.
   */
  payerHash: (payer: string) => string
  /** Replays of one settled payment within its window (REPLAY_LIMIT); default 3. */
  replayLimit?: number
  observer?: PaymentObserver
  /** Receives what is not a payment event (refusals, replays…); must not throw. */
  onNote?: (note: PaymentNote) => void
  /** The tools' clock, read here and passed to the worker with each call. */
  env?: ToolEnv
  /**
   * The payments' clock, in epoch milliseconds (an authorization's validity is checked on it);
   * default `Date.now`. Not the tools' clock: tests fix that one in the past.
   */
  now?: () => number
  /**
   * Whether a settlement may start now: false once the service is shutting down and a
   * settlement (see `worstSettleMs`) could not finish before the shutdown deadline, so that no
   * payment is settled without its reply being sent. Always true when absent.
   */
  canSettle?: () => boolean
  /**
   * Signs the receipts of every paid 200 (src/receipts) and the offers of every 402. Absent (unit
   * tests of the gate): no receipts.
   */
  receipts?: Receipts
}

const WINDOW = `${DUPLICATE_WINDOW_MS / 1000} seconds`

/**
 * Creates the payment gate.
 *
 * @example
 * const gate = createPaymentGate({ link, guard: createMemoryGuard(), runner, payerHash })
 * const { result, settlement } = await gate.execute({ tool, transport: 'http', source, payment, resource })
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const { link, guard, runner, payerHash } = options
  const env = options.env ?? systemEnv
  const replayLimit = options.replayLimit ?? DEFAULT_REPLAY_LIMIT
  const now = options.now ?? Date.now
  const offerOf = createOffers(options.receipts)

  const emit = async (event: PaymentEvent) => {
    if (!options.observer) return
    try {
      await options.observer(event)
    } catch (error) {
      // Telemetry never fails a paid call.
      logger.error({ err: describeError(error), outcome: event.outcome }, 'payment observer failed')
    }
  }
  const note = (call: PaidCall, outcome: PaymentNote['outcome'], network?: string, code?: string) =>
    options.onNote?.({
      tool: call.tool.id,
      transport: call.transport,
      outcome,
      ...(network ? { network } : {}),
      ...(code ? { code } : {}),
    })

  /** A refusal before verify (the call's points were taken before its work). */
  function refuse(call: PaidCall, error: Error & { code: string }, network?: string): never {
    note(call, 'refused', network, error.code)
    throw error
  }

  async function execute(call: PaidCall): Promise<PaidResult> {
    // Work on what came without money is paid for before it starts: one point per 64 KiB.
    const charged = call.payment === undefined ? 0 : await chargeBefore(call)
    const state = await link.ready()
    const offer = await offerOf(state, call)
    if (call.payment === undefined) return unpaid(call, offer)

    let presented: PresentedPayment
    try {
      presented = await readPayment(call.payment, state, offer, Math.floor(now() / 1000))
    } catch (error) {
      return refuse(call, error as PaymentRequiredError)
    }
    const network = presented.matched.network
    const refusedBy = <T>(step: () => T) => notingRefusal(call, network, step)
    const checked = accepted(await refusedBy(() => runner.check(call.tool, sourceOf(call), 'paid')))
    if (!('bytes' in checked)) return refuse(call, checked, network)

    // A full pool refuses the call before anything is verified (nothing reserved: see admit()).
    const admission = await refusedBy(() => runner.admit())
    const fp: CallFingerprint = { tool: call.tool.id, inputDigest: checked.digest }
    const keys = [presented.identity.key]
    if (presented.id) keys.unshift(idempotencyKey(presented.id))
    const held = await refusedBy(() => claimAll(guard, keys, pendingRecord(fp, presented.identity)))
    const retentionMs = Math.max(
      DUPLICATE_WINDOW_MS,
      (presented.validUntil + CLOCK_SKEW_SECONDS) * 1000 - now(),
    )
    const ctx: Context = {
      call,
      state,
      offer,
      presented,
      checked,
      fp,
      admission,
      keys,
      charged,
      retentionMs,
    }
    const paid = held ? await onHeld(ctx, held.key, held.record) : await fresh(ctx)
    const settlement = await withReceipt(options.receipts, paid.settlement, {
      tool: call.tool.id,
      resource: call.resource.url,
      requirements: offer.requirements,
      inputDigest: paid.inputDigest,
      result: paid.result,
      nowSeconds: paid.nowSeconds,
    })
    return { ...paid, settlement }
  }

  /**
   * Takes a paid call's points before any work on it: one per started 64 KiB of its body
   * ({@link requestPoints}), unless its transport took them already (`prepaid`).
   *
   * @returns the points this call cost, given back if its payment settles
   * @throws the quota's refusal (429), before anything is read
   */
  async function chargeBefore(call: PaidCall): Promise<number> {
    if (call.prepaid !== undefined) return call.prepaid
    const points = requestPoints(call.source?.body.length ?? 0)
    try {
      await call.quota?.charge(points)
    } catch (error) {
      note(call, 'refused', undefined, (error as { code?: string }).code ?? 'rate_limited')
      throw error
    }
    return points
  }

  /**
   * Runs a step before verify whose failure is ours (no room, the guard down, a check that timed
   * out): the refusal is noted with its code, and costs the client nothing.
   */
  async function notingRefusal<T>(
    call: PaidCall,
    network: string,
    step: () => T,
  ): Promise<Awaited<T>> {
    try {
      return await step()
    } catch (error) {
      const code = (error as { code?: unknown })?.code
      note(call, 'refused', network, typeof code === 'string' ? code : 'internal_error')
      throw error
    }
  }

  /** The 402 of an unpaid request, with the free input check of a body that came with it. */
  async function unpaid(call: PaidCall, offer: Offer): Promise<never> {
    let inputCheck: InputCheck | undefined
    if (call.source && call.source.body.length > 0) {
      // The request's first point is taken where it arrived; a large body pays for its check.
      if (call.prepaid === undefined) {
        await call.quota?.charge(requestPoints(call.source.body.length) - 1)
      }
      inputCheck = await freeCheck(call.tool, call.source)
    }
    throw new PaymentRequiredError(
      'payment_required',
      `Payment required: ${call.tool.path} costs ${call.tool.price} atomic USDC`,
      await offer.unpaid(),
      inputCheck ? { inputCheck } : {},
    )
  }

  /**
   * The free check of an unpaid body, on the free lane: when that lane is full or the check runs
   * out of time, the 402 is answered all the same, saying the body was not checked.
   */
  async function freeCheck(
    tool: PaidCall['tool'],
    source: InputSource,
  ): Promise<InputCheck | undefined> {
    try {
      return inputCheckOf(await runner.check(tool, source, 'free'))
    } catch (error) {
      if (!(error instanceof OverloadedError || error instanceof CheckTimeoutError)) throw error
      return {
        valid: null,
        errors: [],
        reason:
          error instanceof OverloadedError
            ? 'The free input check is busy: the body was not checked. A paid call checks it before its payment is verified and charges nothing if it is invalid'
            : "The body could not be checked within the free check's time budget. A paid call checks it before its payment is verified and charges nothing if it is invalid",
      }
    }
  }

  /** A call whose keys are all its own: verify, run, settle. */
  async function fresh(ctx: Context): Promise<PaidResult> {
    const { call, state, presented, offer } = ctx
    const records = callRecords(guard, ctx.keys, {
      key: ctx.presented.identity.key,
      ms: ctx.retentionMs,
    })
    const event = eventOf(ctx)
    let verdict: Awaited<ReturnType<typeof verifyPayment>>
    try {
      verdict = await verifyPayment(
        link,
        state,
        presented.payment,
        presented.matched,
        offer.extensions,
      )
    } catch (error) {
      await records.release()
      note(call, 'refused', event.network, (error as { code?: string }).code)
      throw error
    }
    if (!verdict.valid) {
      await records.release()
      note(call, 'verify_failed', event.network, verdict.reason)
      throw new PaymentRequiredError(
        'payment_verification_failed',
        `The facilitator rejected the payment: ${verdict.reason}`,
        await offer.refusal(verdict.reason),
      )
    }
    void emit({ ...event, outcome: 'verified', payer: verdict.payer })
    const payer = verdict.payer ? payerHash(verdict.payer) : undefined
    let ran: Ran
    try {
      ran = await runThenMaySettle(ctx)
    } catch (error) {
      await records.release()
      await emit({ ...event, outcome: 'tool_failed_unsettled', payer: verdict.payer })
      throw error
    }
    return settleAndRecord(ctx, records, ran, payer, verdict.payer)
  }

  /**
   * Runs the tool, then checks that a settlement may still start (shutdown).
   *
   * @throws {ToolError} the tool's refusal, or `tool_failed` for anything unexpected
   */
  async function runThenMaySettle(ctx: Context): Promise<Ran> {
    try {
      const nowSeconds = env.nowSeconds()
      const result = await ctx.admission.run(ctx.call.tool, ctx.checked, nowSeconds)
      if (options.canSettle && !options.canSettle()) {
        throw new ShuttingDownError(
          'The service is shutting down and could not settle this call in time; nothing was charged',
        )
      }
      return { result, nowSeconds }
    } catch (error) {
      if (
        error instanceof ToolError ||
        error instanceof ToolTimeoutError ||
        error instanceof OverloadedError ||
        error instanceof ShuttingDownError
      ) {
        throw error
      }
      // The name only: a message may quote the input.
      logger.error(
        { tool: ctx.call.tool.id, err: error instanceof Error ? error.name : typeof error },
        'tool threw an unexpected error',
      )
      throw new ToolError('tool_failed', 'The tool failed on this input; nothing was charged')
    }
  }

  /**
   * Settles a call whose tool ran, and records what became of it under every key of the call.
   *
   * @param payer - the payer's keyed hash (for the records)
   * @param rawPayer - the payer address as verify gave it (for the telemetry event only)
   */
  async function settleAndRecord(
    ctx: Context,
    records: CallRecords,
    ran: Ran,
    payer: string | undefined,
    rawPayer: string | undefined,
  ): Promise<PaidResult> {
    const { call, state, presented, offer, fp } = ctx
    const event = eventOf(ctx)
    const outcome = await settlePayment(
      link,
      state,
      presented.payment,
      presented.matched,
      offer.extensions,
    )
    const base = {
      call: fp,
      payment: presented.identity.key,
      proof: presented.identity.proof,
      ...(payer ? { payer } : {}),
    }
    switch (outcome.kind) {
      case 'settled': {
        // The record for replays: fingerprint and SettleResponse, never the payer address.
        const { payer: settledPayer, ...recorded } = outcome.settlement
        await records.put({ ...base, state: 'settled', settlement: recorded })
        await emit({
          ...event,
          amount: outcome.settlement.amount ?? event.amount,
          outcome: 'settled',
          payer: settledPayer ?? rawPayer,
        })
        call.quota?.reward(ctx.charged)
        return { ...ran, settlement: outcome.settlement, inputDigest: fp.inputDigest }
      }
      case 'failed': {
        await records.put({ ...base, state: 'spent' })
        await emit({ ...event, outcome: 'settle_failed', payer: rawPayer })
        const reason = outcome.settlement.errorReason ?? 'settlement_failed'
        throw new PaymentRequiredError(
          'settlement_failed',
          `Settlement failed: ${reason}; the result is withheld`,
          await offer.refusal(reason),
          { settlement: outcome.settlement },
        )
      }
      case 'unknown': {
        await records.put({ ...base, state: 'unknown' })
        await emit({ ...event, outcome: 'settle_failed', payer: rawPayer })
        note(call, 'settle_unknown', event.network)
        throw new SettlementUnknownError()
      }
      case 'unsent': {
        // Nothing reached the facilitator: the payment did not move and may be sent again.
        await records.release()
        await emit({ ...event, outcome: 'settle_failed', payer: rawPayer })
        throw new FacilitatorUnavailableError(
          'Payment facilitator is unavailable during settlement; the result is withheld and nothing was charged: retry the same payment',
        )
      }
    }
  }

  /**
   * Answers a call whose payment or `payment-identifier` id the guard holds (its points were taken
   * before). The holder's record is answered for only to its payer: a request presenting the very
   * payment of the record (same authorization and signature), or one whose own payment verifies
   * (verify, never settle) to the same payer under the record's id. A copy of the record's own
   * authorization with another signature gets 409 `payment_conflict`; anyone else 409
   * `payment_identifier_conflict` whatever the tool and input, or 409 `payment_in_progress` while
   * the record is pending, so nothing is learnt about the call that holds the id.
   */
  async function onHeld(ctx: Context, key: string, record: GuardRecord): Promise<PaidResult> {
    const { call, presented } = ctx
    const network = presented.matched.network
    const samePayment =
      record.payment === presented.identity.key && record.proof === presented.identity.proof
    if (!samePayment && key === presented.identity.key) {
      note(call, 'refused', network, 'payment_conflict')
      throw new PaymentConflictError()
    }
    if (!samePayment) {
      if (record.state === 'pending') {
        note(call, 'refused', network, 'payment_in_progress')
        throw inProgress()
      }
      const verdict = await verifyPayment(
        link,
        ctx.state,
        presented.payment,
        presented.matched,
        ctx.offer.extensions,
      )
      if (
        !verdict.valid ||
        !verdict.payer ||
        !record.payer ||
        payerHash(verdict.payer) !== record.payer
      ) {
        note(call, 'refused', network, 'payment_identifier_conflict')
        throw new PaymentIdentifierConflictError()
      }
    }
    return ownRecord(ctx, key, record, samePayment)
  }

  /** Answers the payer of a held record (see {@link onHeld}). */
  async function ownRecord(
    ctx: Context,
    key: string,
    record: GuardRecord,
    samePayment: boolean,
  ): Promise<PaidResult> {
    const { call, fp } = ctx
    const network = ctx.presented.matched.network
    const duplicate = async (why: string): Promise<never> => {
      note(call, 'refused', network, 'duplicate_settlement')
      throw new PaymentRequiredError(
        'duplicate_settlement',
        `This payment ${why}; sign a new one`,
        await ctx.offer.refusal('duplicate_settlement'),
      )
    }
    const same = sameCall(record.call, fp)
    switch (record.state) {
      case 'settled': {
        if (!same)
          return duplicate(
            `already paid for a different call (tool or input) in the last ${WINDOW}`,
          )
        const count = await guard.countReplay(record.payment, ctx.retentionMs)
        if (count > replayLimit) {
          return duplicate(
            `was already answered ${replayLimit} more times (REPLAY_LIMIT): its replays are used up`,
          )
        }
        // Deterministic tools: the same tool and input give the same result. Nothing is verified
        // or settled; a failure here (overloaded, shutting down) charges nothing more.
        const nowSeconds = env.nowSeconds()
        const result = await ctx.admission.run(call.tool, ctx.checked, nowSeconds)
        note(call, 'replayed', network)
        logger.info({ tool: call.tool.id, replay: count }, 'paid call replayed')
        return {
          result,
          nowSeconds,
          settlement: record.settlement as SettleResponse,
          inputDigest: fp.inputDigest,
          replayed: true,
        }
      }
      case 'pending':
        if (same) {
          note(call, 'refused', network, 'payment_in_progress')
          throw inProgress()
        }
        return duplicate('is being used for a different call (tool or input) right now')
      case 'spent':
        return duplicate(`was already sent to settlement in the last ${WINDOW}, which failed`)
      case 'unknown':
        if (!same)
          return duplicate(
            `already paid for a different call (tool or input) in the last ${WINDOW}`,
          )
        if (!samePayment) {
          note(call, 'refused', network, 'settlement_unknown')
          throw new SettlementUnknownError(
            'An earlier payment under this payment-identifier id was sent to settlement with an unknown outcome; retry with that same payment to settle it, not a new one',
          )
        }
        return resettle(ctx, key, record)
    }
  }

  /**
   * Retries the settlement of a payment whose outcome was unknown: takes the record back
   * atomically (one retry at a time), runs the tool again, asks the facilitator to settle the same
   * payment again, and records what became of it. While the outcome stays unknown the record stays
   * `unknown` (the first attempt may have landed): it is never released.
   */
  async function resettle(ctx: Context, key: string, record: GuardRecord): Promise<PaidResult> {
    const { call } = ctx
    if (!(await guard.reclaim(key, record.proof, { ...record, state: 'pending' }))) {
      note(call, 'refused', ctx.presented.matched.network, 'payment_in_progress')
      throw inProgress()
    }
    const records = callRecords(guard, ctx.keys, {
      key: ctx.presented.identity.key,
      ms: ctx.retentionMs,
    })
    const held: CallRecords = {
      put: (r) => records.put(r),
      // Never free a payment that may have moved: back to `unknown`.
      release: () => records.put({ ...record, state: 'unknown' }),
    }
    let ran: Ran
    try {
      ran = await runThenMaySettle(ctx)
    } catch (error) {
      await held.release()
      throw error
    }
    try {
      return await settleAndRecord(ctx, held, ran, record.payer, undefined)
    } catch (error) {
      if (error instanceof FacilitatorUnavailableError) throw new SettlementUnknownError()
      throw error
    }
  }

  return { execute, link, runner }
}

/** A tool run: its result and the clock it was computed with (Unix seconds). */
interface Ran {
  result: JsonResult
  nowSeconds: number
}

/** The per-call state the steps share. */
interface Context {
  call: PaidCall
  state: LiveState
  offer: Offer
  presented: PresentedPayment
  checked: CheckedInput
  fp: CallFingerprint
  admission: Admission
  keys: string[]
  /** Rate-limit points the call was charged before its work (given back if it settles). */
  charged: number
  /** How long the payment's own key stays on record once used, in milliseconds. */
  retentionMs: number
}

/** The telemetry event of a call, before its outcome. */
function eventOf(ctx: Context): Omit<PaymentEvent, 'outcome'> {
  return {
    tool: ctx.call.tool.id,
    transport: ctx.call.transport,
    network: ctx.presented.matched.network,
    amount: ctx.presented.matched.amount,
  }
}

function inProgress(): PaymentInProgressError {
  return new PaymentInProgressError(
    'This payment is being processed by another request; retry after Retry-After for its result',
  )
}

/** The input source of a paid call; an HTTP request without a body has an empty one. */
function sourceOf(call: PaidCall): InputSource {
  return call.source ?? { body: new Uint8Array(0) }
}

/**
 * A paid call's checked input, or the error that refuses it (400, before verify).
 *
 * @example accepted({ status: 'invalid_json', message: '…' }) // an InvalidJsonError
 */
function accepted(outcome: CheckOutcome): CheckedInput | (Error & { code: string }) {
  switch (outcome.status) {
    case 'ok':
      return { bytes: outcome.bytes, digest: outcome.digest }
    case 'absent':
      return new InvalidJsonError('A JSON request body is required')
    case 'invalid_json':
      return new InvalidJsonError(outcome.message)
    case 'invalid':
      return new InvalidInputError(outcome.issues)
    case 'refused':
      return new ToolError(outcome.error.code, outcome.error.message, outcome.error.details)
    case 'crash':
      logger.error({ err: outcome.name }, 'input check failed unexpectedly')
      return new ToolError(
        'tool_failed',
        'The input check failed on this input; nothing was charged',
      )
  }
}

/**
 * The free input check of an unpaid request: what a paid call with this body would be refused
 * for, or `valid`. A tool's shape refusal is an issue with its `code`.
 */
function inputCheckOf(outcome: CheckOutcome): InputCheck | undefined {
  switch (outcome.status) {
    case 'ok':
      return { valid: true, errors: [] }
    case 'absent':
      return undefined
    case 'invalid_json':
      return { valid: false, errors: [{ path: '', message: outcome.message }] }
    case 'invalid':
      return { valid: false, errors: outcome.issues }
    case 'refused': {
      const field = outcome.error.details?.field
      const path =
        typeof field === 'string'
          ? field.startsWith('/') || field === ''
            ? field
            : `/${field}`
          : ''
      return {
        valid: false,
        errors: [{ path, message: outcome.error.message, code: outcome.error.code }],
      }
    }
    case 'crash':
      return { valid: false, errors: [{ path: '', message: 'The input could not be checked' }] }
  }
}
