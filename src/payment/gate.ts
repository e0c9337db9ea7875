import { createHash } from 'node:crypto'
import { PaymentPayloadV2Schema } from '@x402/core/schemas'
import type {
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
  ResourceInfo,
  SettleResponse,
} from '@x402/core/types'
import { SettleError, VerifyError } from '@x402/core/types'
import canonicalize from 'canonicalize'
import type { z } from 'zod'
import { describeError, logger } from '../logger.js'
import type { Receipts } from '../receipts/index.js'
import { OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import type { JsonResult } from '../runner/json-result.js'
import type { Admission, ToolRunner } from '../runner/runner.js'
import { systemEnv, type ToolDefinition, type ToolEnv, ToolError } from '../tools/types.js'
import {
  FacilitatorUnavailableError,
  type InputCheck,
  type InputIssue,
  InvalidInputError,
  PaymentInProgressError,
  PaymentRequiredError,
  ShuttingDownError,
} from './errors.js'
import type { FacilitatorLink, LiveState } from './facilitator.js'
import {
  type CallFingerprint,
  DUPLICATE_WINDOW_MS,
  fingerprint,
  type GuardRecord,
  idempotencyKey,
  paymentKey,
  type SettlementGuard,
  sameCall,
} from './guard.js'
import { paymentIdentifierOf, withPaymentIdentifier } from './idempotency.js'

/**
 * Largest PaymentPayload accepted, in bytes of its JSON (32 KiB), and of the Base64
 * `PAYMENT-SIGNATURE` that carries it over HTTP. A real one, with the `accepted` requirements,
 * `resource` and bazaar `extensions` it echoes, is a few KiB; anything larger is refused before
 * it is decoded, validated or sent to the facilitator.
 */
export const MAX_PAYMENT_BYTES = 32 * 1024

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

/** Receives payment events. A `settled` event is awaited before the result is released. */
export type PaymentObserver = (event: PaymentEvent) => Promise<void>

/** One paid tool call, from either transport. */
export interface PaidCall {
  tool: ToolDefinition
  transport: 'http' | 'mcp'
  /** The parsed JSON body or MCP arguments; `undefined` when the request carried none. */
  input: unknown
  /** Why the input could not be read at all (e.g. malformed JSON), for the free input check. */
  inputProblem?: string
  /** The presented PaymentPayload (decoded, not yet validated); `undefined` when none. */
  payment: unknown
  /**
   * Why a presented payment could not be read at all (HTTP: an over-long, non-Base64 or non-JSON
   * PAYMENT-SIGNATURE); the call is refused with `invalid_payment` and this reason.
   */
  paymentProblem?: string
  /** `resource` of the PaymentRequired (url is the public endpoint URL or the MCP tool URL). */
  resource: ResourceInfo
  /** PaymentRequired extensions (bazaar discovery info). */
  extensions?: Record<string, unknown>
}

/**
 * A settled call: the tool result (JSON made by the worker) and the facilitator's SettleResponse.
 * `replayed`: the call repeats one that settled within the window (same payment or same
 * `payment-identifier` id, same tool and input): the result was recomputed, nothing was verified
 * or settled again, and `settlement` is the original SettleResponse (without `payer`, which the
 * guard does not keep).
 */
export interface PaidResult {
  result: JsonResult
  settlement: SettleResponse
  replayed?: true
  /** The tools' clock this result was computed with, in Unix seconds (the receipt's `iat`). */
  nowSeconds: number
}

/**
 * The payment gate: the rules of a paid call, written once for HTTP and MCP.
 *
 * 1. no payment -> {@link PaymentRequiredError} `payment_required` (both rails, plus the free
 *    input check when a body came with it);
 * 2. invalid input -> {@link InvalidInputError}, and the facilitator is never called;
 * 3. the runner admits the call when its pool has room -> full: {@link OverloadedError}, before
 *    anything is verified;
 * 4. the guard claims the payment (its payload key, and its `payment-identifier` id when the client
 *    sent one): held by a call in progress -> {@link PaymentInProgressError} (409); settled
 *    within the window for the same tool and input -> an idempotent replay (the tool runs again,
 *    nothing is verified or settled, the original SettleResponse is returned); settled for
 *    another call, or spent by a failed settlement -> `duplicate_settlement`; the shared guard
 *    unreachable -> {@link GuardUnavailableError} (503), before verify;
 * 5. verify with the facilitator (bounded) -> unreachable: {@link FacilitatorUnavailableError};
 * 6. run the tool on a worker under its time budget -> a {@link ToolError},
 *    {@link ToolTimeoutError} or (past its queue deadline) {@link OverloadedError} is rethrown and
 *    nothing is settled;
 * 7. settle (bounded) -> failed: `settlement_failed`, the result is withheld; while the service
 *    shuts down, a settlement that could not finish before its deadline is not started
 *    ({@link ShuttingDownError}, nothing charged);
 * 8. the `settled` telemetry event is awaited;
 * 9. the result is released with the SettleResponse, which carries the signed delivery receipt
 *    (and, when settled now, the `offer-receipt` receipt) when the gate has `receipts`.
 */
export interface PaymentGate {
  /**
   * Runs a paid call.
   *
   * @throws {PaymentRequiredError} 402 cases
   * @throws {InvalidInputError} input does not match the tool's schema
   * @throws {ToolError} the tool rejected its input (never settled)
   * @throws {ToolTimeoutError} the tool ran out of its time budget (never settled)
   * @throws {OverloadedError} no capacity to run the tool: refused before verify, or verified but
   *   not run within the queue deadline (never settled)
   * @throws {FacilitatorUnavailableError} fail-closed 503
   * @throws {ShuttingDownError} the service is shutting down; nothing was charged
   * @throws {PaymentInProgressError} the same payment is being processed by another request
   * @throws {GuardUnavailableError} the shared guard (Redis) is unreachable; nothing was charged
   */
  execute(call: PaidCall): Promise<PaidResult>
  /** Validates input against a tool's schema without running it (the free pre-payment check). */
  checkInput(tool: ToolDefinition, input: unknown): InputCheck
  link: FacilitatorLink
  /** The tool runner (its options are published as limits). */
  runner: ToolRunner
}

/** Options of {@link createPaymentGate}. */
export interface PaymentGateOptions {
  link: FacilitatorLink
  guard: SettlementGuard
  /** Runs the tools (worker threads, time budget, admission). */
  runner: ToolRunner
  observer?: PaymentObserver
  /** The tools' clock, read here and passed to the worker with each call. */
  env?: ToolEnv
  /**
   * Whether a settlement may start now: false once the service is shutting down and a
   * settlement (bounded by FACILITATOR_TIMEOUT_MS) could not finish before the shutdown deadline,
   * so that no payment is settled without its reply being sent. Always true when absent.
   */
  canSettle?: () => boolean
  /**
   * Signs the receipts of every paid 200 (src/receipts) and the offers of every 402. Absent (unit
   * tests of the gate): no receipts.
   */
  receipts?: Receipts
}

/** UTF-8 size of a value's JSON; Infinity when it has none (nested too deep to serialise). */
function jsonBytes(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '')
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

const REQUIREMENT_FIELDS = ['scheme', 'network', 'amount', 'asset', 'payTo'] as const

/**
 * Which field of the `accepted` requirements a payment echoes departs from what was offered: the
 * scheme or network when no offer has it, else the first of amount, asset and payTo that differs
 * from the offer for that network.
 *
 * @example mismatch(offers, { ...offers[0], amount: '999' })
 * // 'amount "999" is not the offered "1000" for exact on eip155:8453'
 */
export function mismatch(
  offers: readonly PaymentRequirements[],
  accepted: PaymentRequirements,
): string {
  const offered = (field: 'scheme' | 'network') =>
    [...new Set(offers.map((offer) => offer[field]))].map((v) => JSON.stringify(v)).join(', ')
  if (!offers.some((offer) => offer.scheme === accepted.scheme)) {
    return `scheme ${JSON.stringify(accepted.scheme)} is not offered (offered: ${offered('scheme')})`
  }
  const offer = offers.find((o) => o.scheme === accepted.scheme && o.network === accepted.network)
  if (!offer) {
    return `network ${JSON.stringify(accepted.network)} is not offered (offered: ${offered('network')})`
  }
  for (const field of REQUIREMENT_FIELDS) {
    if (offer[field] !== accepted[field]) {
      return `${field} ${JSON.stringify(accepted[field])} is not the offered ${JSON.stringify(offer[field])} for ${offer.scheme} on ${offer.network}`
    }
  }
  return 'its accepted requirements (maxTimeoutSeconds or extra) differ from the offered ones'
}

/**
 * Converts Zod issues to JSON Pointer paths (RFC 6901).
 *
 * @example
 * toInputIssues(error) // [{ path: '/operations/0/type', message: 'Invalid option: …' }]
 */
export function toInputIssues(error: z.ZodError): InputIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path
      .map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`)
      .join(''),
    message: issue.message,
  }))
}

/** SHA-256 (lower-case hex) of the RFC 8785 canonical JSON of a value. */
function canonicalSha256(value: unknown): string {
  return createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')
}

/**
 * Creates the payment gate.
 *
 * @example
 * const gate = createPaymentGate({ link, guard: createMemoryGuard(), runner })
 * const { result, settlement } = await gate.execute({ tool, transport: 'http', input, payment, resource })
 */
export function createPaymentGate(options: PaymentGateOptions): PaymentGate {
  const { link, guard, runner } = options
  const env = options.env ?? systemEnv

  const emit = async (event: PaymentEvent) => {
    if (!options.observer) return
    try {
      await options.observer(event)
    } catch (error) {
      // Telemetry never fails a paid call.
      logger.error({ err: describeError(error), outcome: event.outcome }, 'payment observer failed')
    }
  }

  // The unpaid PaymentRequired of a tool is the same for every request until the facilitator's
  // /supported changes (a new LiveState): built once per state, transport and tool, as crawlers
  // and agents probe it far more often than they pay. Shared: callers must not mutate it.
  // It carries the signed offers of the receipts' current signing period: an entry of another period
  // is built again.
  const offers = new WeakMap<
    LiveState,
    Map<string, { epoch: number; offer: Promise<PaymentRequired> }>
  >()
  function offered(
    state: LiveState,
    call: PaidCall,
    build: () => Promise<PaymentRequired>,
  ): Promise<PaymentRequired> {
    let perState = offers.get(state)
    if (!perState) {
      perState = new Map()
      offers.set(state, perState)
    }
    const key = `${call.transport} ${call.tool.id} ${call.resource.url}`
    const epoch = options.receipts?.offerEpoch() ?? 0
    let entry = perState.get(key)
    if (!entry || entry.epoch !== epoch) {
      const offer = build()
      const built = { epoch, offer }
      entry = built
      offer.catch(() => perState.get(key) === built && perState.delete(key))
      perState.set(key, built)
    }
    return entry.offer
  }

  function checkInput(tool: ToolDefinition, input: unknown): InputCheck {
    const parsed = tool.input.safeParse(input)
    return parsed.success
      ? { valid: true, errors: [] }
      : { valid: false, errors: toInputIssues(parsed.error) }
  }

  async function execute(call: PaidCall): Promise<PaidResult> {
    const { tool } = call
    const extensions = {
      ...withPaymentIdentifier(call.extensions),
      // The official offer-receipt extension: signed offers in the 402 (src/receipts).
      ...options.receipts?.offerReceipt.declaration,
    }
    const state: LiveState = await link.ready()
    const requirements = await state.accepts(tool.price)
    const paymentRequired = (error: string): Promise<PaymentRequired> =>
      state.server.createPaymentRequiredResponse(requirements, call.resource, error, extensions)
    const offer = offered(state, call, () => paymentRequired('Payment required'))

    if (call.paymentProblem !== undefined) {
      throw new PaymentRequiredError(
        'invalid_payment',
        `The payment could not be read: ${call.paymentProblem}`,
        await paymentRequired('invalid_payload'),
      )
    }
    if (call.payment === undefined) {
      const inputCheck: InputCheck | undefined = call.inputProblem
        ? { valid: false, errors: [{ path: '', message: call.inputProblem }] }
        : call.input === undefined
          ? undefined
          : checkInput(tool, call.input)
      throw new PaymentRequiredError(
        'payment_required',
        `Payment required: ${tool.path} costs ${tool.price} atomic USDC`,
        await offer,
        inputCheck ? { inputCheck } : {},
      )
    }

    const size = jsonBytes(call.payment)
    if (size > MAX_PAYMENT_BYTES) {
      throw new PaymentRequiredError(
        'invalid_payment',
        `The payment is ${Number.isFinite(size) ? `${size} bytes` : 'too deeply nested'} as JSON; the limit is ${MAX_PAYMENT_BYTES / 1024} KiB`,
        await paymentRequired('invalid_payload'),
      )
    }
    const decoded = PaymentPayloadV2Schema.safeParse(call.payment)
    if (!decoded.success) {
      const issue = decoded.error.issues[0]
      const where = issue?.path.length ? ` at ${issue.path.join('.')}` : ''
      throw new PaymentRequiredError(
        'invalid_payment',
        `The payment is not a valid x402 v2 PaymentPayload${issue ? `: ${issue.message}${where}` : ''}`,
        await paymentRequired('invalid_payload'),
      )
    }
    // Validated, but forwarded as received: the schema strips keys the facilitator may need.
    const payment = call.payment as PaymentPayload

    // No body at all reads as {} (every field has a default or is required); a JSON null is a body.
    const parsed = tool.input.safeParse(call.input === undefined ? {} : call.input)
    if (!parsed.success) throw new InvalidInputError(toInputIssues(parsed.error))

    const matched = state.server.findMatchingRequirements(requirements, payment)
    if (!matched) {
      throw new PaymentRequiredError(
        'invalid_payment',
        `The payment matches none of the offered rails: ${mismatch(requirements, payment.accepted)}`,
        await paymentRequired('No matching payment requirements'),
      )
    }
    const echo = state.server.validateExtensions(await offer, payment)
    if (!echo.valid) {
      throw new PaymentRequiredError(
        'invalid_payment',
        `The payment altered the "${echo.extensionKey}" extension it echoes`,
        await paymentRequired(echo.invalidReason),
      )
    }

    const identifier = paymentIdentifierOf(payment)
    if (!identifier.valid) {
      throw new PaymentRequiredError(
        'invalid_payment',
        `The payment's payment-identifier extension is invalid: ${identifier.reason}`,
        await paymentRequired('invalid_payload'),
      )
    }

    // A full pool refuses the call before anything is verified (nothing reserved: see admit()).
    const admission = runner.admit()
    const keys = [paymentKey(payment)]
    if (identifier.id) keys.unshift(idempotencyKey(identifier.id))
    const fp = fingerprint(tool.id, parsed.data)
    const outcome = await paid(
      { ...call, extensions },
      state,
      payment,
      matched,
      parsed.data,
      fp,
      admission,
      keys,
      paymentRequired,
    )
    return receipted(call, requirements, fp, outcome)
  }

  /**
   * The receipt step (src/receipts): the delivery receipt, and the official offer-receipt receipt
   * when the call settled now, in the SettleResponse. A receipt that cannot be signed (a bug) is
   * logged and the paid result still released: it has been paid for.
   *
   * The rail's facts come from the settlement's own network: a replay re-signed on the other rail
   * (same payment-identifier id) matched that rail, but was settled on the first one.
   */
  async function receipted(
    call: PaidCall,
    requirements: readonly PaymentRequirements[],
    fp: CallFingerprint,
    outcome: PaidResult,
  ): Promise<PaidResult> {
    if (!options.receipts) return outcome
    const { settlement } = outcome
    const rail = requirements.find((r) => r.network === settlement.network)
    try {
      if (!rail) throw new Error(`no offered rail for the settled network ${settlement.network}`)
      const delivered = await options.receipts.deliver(settlement, {
        iat: outcome.nowSeconds,
        resource: call.resource.url,
        tool: call.tool.id,
        input_sha256: fp.inputDigest,
        // Today's wiring: the result's digest is computed here, on the main thread (a parse and
        // an RFC 8785 serialisation of the result); the reshaped gate computes both digests in
        // the worker that ran the tool.
        result_sha256: canonicalSha256(outcome.result.value()),
        network: settlement.network,
        asset: rail.asset,
        amount: settlement.amount ?? rail.amount,
        pay_to: rail.payTo,
        transaction: settlement.transaction,
      })
      return { ...outcome, settlement: delivered }
    } catch (error) {
      logger.error({ tool: call.tool.id, err: describeError(error) }, 'receipt not signed')
      return outcome
    }
  }

  /** Runs a guard write whose failure must not change the call's answer (the record expires). */
  async function quietly(what: string, write: () => Promise<void>): Promise<void> {
    try {
      await write()
    } catch (error) {
      logger.error({ err: describeError(error), op: what }, 'guard write failed')
    }
  }

  /**
   * Claims every key of the call, in order; on the first held one, frees those claimed and
   * returns its record.
   *
   * @throws {GuardUnavailableError} the shared guard is unreachable (those claimed are freed)
   */
  async function claimAll(
    keys: readonly string[],
    call: CallFingerprint,
  ): Promise<GuardRecord | undefined> {
    const claimed: string[] = []
    const freeClaimed = () =>
      Promise.all(claimed.map((k) => quietly('release', () => guard.release(k))))
    for (const key of keys) {
      let answer: Awaited<ReturnType<SettlementGuard['claim']>>
      try {
        answer = await guard.claim(key, call)
      } catch (error) {
        await freeClaimed()
        throw error
      }
      if (answer.state === 'claimed') {
        claimed.push(key)
        continue
      }
      await freeClaimed()
      return answer
    }
    return undefined
  }

  async function paid(
    call: PaidCall,
    state: LiveState,
    payment: PaymentPayload,
    matched: PaymentRequirements,
    input: unknown,
    fp: CallFingerprint,
    admission: Admission,
    keys: readonly string[],
    paymentRequired: (error: string) => Promise<PaymentRequired>,
  ): Promise<PaidResult> {
    const { tool, extensions } = call
    const held = await claimAll(keys, fp)
    if (held) return replayOrRefuse(held, fp, tool, input, admission, paymentRequired)
    const releaseAll = () =>
      Promise.all(keys.map((k) => quietly('release', () => guard.release(k))))
    const spendAll = () => Promise.all(keys.map((k) => quietly('spend', () => guard.spend(k, fp))))
    const event = { tool: tool.id, transport: call.transport, network: matched.network }

    let payer: string | undefined
    try {
      const verified = await verify(state, payment, matched, extensions)
      payer = verified.payer
      if (!verified.isValid) {
        const reason = verified.invalidReason ?? 'invalid_payment'
        throw new PaymentRequiredError(
          'payment_verification_failed',
          `The facilitator rejected the payment: ${reason}`,
          await paymentRequired(reason),
        )
      }
    } catch (error) {
      await releaseAll()
      throw error
    }
    await emit({ ...event, amount: matched.amount, outcome: 'verified', payer })

    let result: JsonResult
    const nowSeconds = env.nowSeconds()
    try {
      result = await admission.run(tool, input, nowSeconds)
      if (options.canSettle && !options.canSettle()) {
        throw new ShuttingDownError(
          'The service is shutting down and could not settle this call in time; nothing was charged',
        )
      }
    } catch (error) {
      await releaseAll()
      await emit({ ...event, amount: matched.amount, outcome: 'tool_failed_unsettled', payer })
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
        { tool: tool.id, err: error instanceof Error ? error.name : typeof error },
        'tool threw an unexpected error',
      )
      throw new ToolError('tool_failed', 'The tool failed on this input; nothing was charged')
    }

    let settlement: SettleResponse
    try {
      settlement = await settle(state, payment, matched, extensions)
    } catch (error) {
      await spendAll()
      await emit({ ...event, amount: matched.amount, outcome: 'settle_failed', payer })
      throw error
    }
    if (!settlement.success) {
      await spendAll()
      await emit({ ...event, amount: matched.amount, outcome: 'settle_failed', payer })
      const reason = settlement.errorReason ?? 'settlement_failed'
      throw new PaymentRequiredError(
        'settlement_failed',
        `Settlement failed: ${reason}; the result is withheld`,
        await paymentRequired(reason),
        { settlement },
      )
    }
    // The record for replays: fingerprint and SettleResponse, never the payer.
    const { payer: _payer, ...recorded } = settlement
    await Promise.all(keys.map((k) => quietly('settle', () => guard.settle(k, fp, recorded))))
    await emit({
      ...event,
      amount: settlement.amount ?? matched.amount,
      outcome: 'settled',
      payer: settlement.payer ?? payer,
    })
    return { result, settlement, nowSeconds }
  }

  /**
   * Answers a call whose payment (or payment-identifier id) the guard holds: a replay of the
   * settled call with the same fingerprint, else 409 (in progress) or 402 (spent, or another
   * call).
   */
  async function replayOrRefuse(
    held: GuardRecord,
    fp: CallFingerprint,
    tool: ToolDefinition,
    input: unknown,
    admission: Admission,
    paymentRequired: (error: string) => Promise<PaymentRequired>,
  ): Promise<PaidResult> {
    const window = `${DUPLICATE_WINDOW_MS / 1000} seconds`
    if (held.state === 'settled' && sameCall(held.call, fp)) {
      // Deterministic tools: the same tool and input give the same result. Nothing is verified
      // or settled; a failure here (overloaded, shutting down) charges nothing more.
      const nowSeconds = env.nowSeconds()
      const result = await admission.run(tool, input, nowSeconds)
      logger.info({ tool: tool.id }, 'paid call replayed')
      return { result, settlement: held.settlement, replayed: true, nowSeconds }
    }
    if (held.state === 'pending' && sameCall(held.call, fp)) {
      throw new PaymentInProgressError(
        'This payment is being processed by another request; retry after Retry-After for its result',
      )
    }
    const why = {
      spent: `was already sent to settlement in the last ${window}`,
      settled: `already paid for a different call (tool or input) in the last ${window}`,
      pending: 'is being used for a different call (tool or input) right now',
    }[held.state]
    throw new PaymentRequiredError(
      'duplicate_settlement',
      `This payment ${why}; sign a new one`,
      await paymentRequired('duplicate_settlement'),
    )
  }

  async function verify(
    state: LiveState,
    payment: PaymentPayload,
    requirements: PaymentRequirements,
    extensions: Record<string, unknown> | undefined,
  ) {
    try {
      const response = await state.server.verifyPayment(payment, requirements, extensions)
      link.observe()
      return response
    } catch (error) {
      // A facilitator 4xx carrying a VerifyResponse is a verdict on the payment, not an outage.
      if (error instanceof VerifyError && error.statusCode < 500) {
        link.observe()
        return {
          isValid: false,
          invalidReason: error.invalidReason ?? 'invalid_payment',
          ...(error.payer ? { payer: error.payer } : {}),
        }
      }
      link.observe(error)
      logger.warn({ err: describeError(error) }, 'facilitator verify failed')
      throw new FacilitatorUnavailableError(
        'Payment facilitator is unavailable; nothing was run or charged',
      )
    }
  }

  async function settle(
    state: LiveState,
    payment: PaymentPayload,
    requirements: PaymentRequirements,
    extensions: Record<string, unknown> | undefined,
  ): Promise<SettleResponse> {
    try {
      const response = await state.server.settlePayment(payment, requirements, extensions)
      link.observe()
      return response
    } catch (error) {
      if (error instanceof SettleError && error.statusCode < 500) {
        link.observe()
        return {
          success: false,
          errorReason: error.errorReason ?? 'settlement_failed',
          transaction: error.transaction ?? '',
          network: requirements.network,
          ...(error.payer ? { payer: error.payer } : {}),
        }
      }
      link.observe(error)
      logger.warn({ err: describeError(error) }, 'facilitator settle failed')
      throw new FacilitatorUnavailableError(
        'Payment facilitator is unavailable during settlement; the result is withheld',
      )
    }
  }

  return { execute, checkInput, link, runner }
}
