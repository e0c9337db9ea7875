import type { ResourceInfo, SettleResponse } from '@x402/core/types'
import type { FacilitatorLink } from '../facilitators/link.js'
import type { Receipts } from '../receipts/index.js'
import type { JsonResult } from '../runner/json-result.js'
import type { InputSource, ToolRunner } from '../runner/runner.js'
import type { QuestionOf, SettlementJudge } from '../settlement/types.js'
import type { LedgerDecision, SettlementLedger } from '../telemetry/ledger.js'
import type { ToolDefinition, ToolEnv } from '../tools/types.js'
import type { SettlementGuard } from './guard.js'
import type { PaymentSource } from './presented.js'
import type { ClientQuota } from './quota.js'
import type { RefundCall } from './refund.js'

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
  /**
   * The x402 scheme that paid: `batch-settlement` for a voucher of a prepaid channel; absent
   * means `exact`.
   */
  scheme?: 'exact' | 'batch-settlement'
  payer?: string
  /** The event's id, when it may be recorded twice (a settlement outcome with a ledger intent). */
  id?: string
  /**
   * The ledger outcome of the call's intent, for an observer that writes it in the event's own
   * transaction (telemetry: one commit for both).
   */
  decides?: { key: string; decision: LedgerDecision }
}

/**
 * Receives payment events, in the order they happen. A `settled` event is awaited before the result
 * is released; a `verified` event is not awaited (the tool runs meanwhile), so that a commit of the
 * telemetry store is not added to every paid call: it is recorded before the outcome that follows
 * it. An observer that wrote the event's `decides` outcome with it resolves true; otherwise the
 * gate writes that outcome itself.
 */
export type PaymentObserver = (event: PaymentEvent) => Promise<unknown>

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
 * The payment gate: the rules of a paid call, written once for HTTP and MCP (gate.ts is the
 * pipeline: charge, offer, read the payment, check the input, claim, verify, run, settle, record,
 * receipt; each step a module of its own).
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
   * @throws {PaymentConflictError} the payment's authorization is held with another signature
   * @throws {CheckTimeoutError} the input check ran out of its time budget (never verified)
   * @throws {GuardUnavailableError} the shared guard (Redis) is unreachable; nothing was charged
   * @throws the quota's refusal (429) when a charged request is over the client's limit
   */
  execute(call: PaidCall): Promise<PaidResult>
  /**
   * Refunds a prepaid channel (the `batch-settlement` refund flow, GET on a tool's URL): nothing
   * runs, nothing is charged. See `refundChannel` (refund.ts).
   *
   * @returns the refund's SettleResponse
   */
  refund(call: RefundCall): Promise<SettleResponse>
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
  /**
   * The write-ahead settlement ledger (telemetry's store): an intent committed before each
   * settle, its outcome after. Absent: none is written.
   */
  ledger?: SettlementLedger
  /** How long a call holds its intent from the resolver, in milliseconds; default 60 s. */
  ledgerHoldMs?: number
  /** Judges a settlement in doubt on chain (the payer's retry); absent: the facilitator is asked. */
  judge?: SettlementJudge
  /** Builds the judge's question of a payment (and the ledger's copy of it). */
  questionOf?: QuestionOf
}

/** Default {@link PaymentGateOptions.ledgerHoldMs}: longer than any settle the budget allows. */
export const DEFAULT_LEDGER_HOLD_MS = 60_000
