import { setTimeout as sleep } from 'node:timers/promises'
import type { CallToolResult, Tool } from '@modelcontextprotocol/client'
import { isPaymentRequiredV2 } from '@x402/core/schemas'
import type { PaymentRequired, PaymentRequirements, SettleResponse } from '@x402/core/types'
import { DayFileError } from './day-file.js'
import { BridgeFailure, FAILURE_META_KEY, failureResult } from './failures.js'
import { SpendCapError, type SpendLedger } from './ledger.js'
import type { Log } from './log.js'
import { RAIL_LABEL, type RailId, railOf } from './rails.js'
import { MAX_RETRY_AFTER_SECONDS, ServiceRateLimitedError } from './rate-limit.js'
import { type ReceiptChecker, ReceiptRefused } from './receipts.js'
import { SPEND_TOOL, spendResult, spendTool } from './spend-tool.js'
import { UnknownToolError } from './unknown-tool.js'
import { formatUsdc, parseAtomic } from './usdc.js'
import { chooseOffer, NoPayableRailError, type Wallet } from './wallet.js'

/** `tools/list` entry `_meta` key of the advertised price (`amount` in atomic USDC units). */
export const PRICE_META_KEY = 'x402/price'
/** `tools/call` params `_meta` key of the PaymentPayload (x402 v2 MCP transport). */
export const PAYMENT_META_KEY = 'x402/payment'
/** Result `_meta` key of the facilitator's SettleResponse (x402 v2 MCP transport). */
export const PAYMENT_RESPONSE_META_KEY = 'x402/payment-response'
/** Result `_meta` key the bridge adds to a paid result: `{network, transaction, amount, display}`. */
export const SETTLEMENT_META_KEY = 'payload-tools/settlement'

/** The service's MCP endpoint, as the bridge uses it. */
export interface RemoteService {
  /** The service's `tools/list`, every page. */
  listTools(): Promise<Tool[]>
  /** One `tools/call`; `meta` becomes `params._meta`. Rejects when the service does not answer. */
  callTool(
    name: string,
    args: Record<string, unknown> | undefined,
    meta?: Record<string, unknown>,
  ): Promise<CallToolResult>
}

/** What a bridge is made of. */
export interface BridgeParts {
  remote: RemoteService
  wallet: Wallet
  ledger: SpendLedger
  /** `PAYER_RAIL`: the rail to pay on when the service offers both. */
  preferredRail?: RailId
  /** Checks the signed delivery receipt of every paid result. */
  receipts: ReceiptChecker
  log: Log
  /**
   * The longest `Retry-After` (seconds) the bridge waits out once before retrying an unpaid
   * request the service refused with 429; default {@link MAX_RETRY_AFTER_SECONDS}.
   */
  maxRetryAfterSeconds?: number
  /** How a paid call answered `settlement_unknown` is resent; default {@link SETTLEMENT_RETRY}. */
  settlementRetry?: Partial<SettlementRetry>
}

/**
 * How the bridge resends the same payment when a paid call answers `settlement_unknown` (the tool
 * ran, the settlement's outcome is unknown, the payment may have moved) or `payment_in_progress`:
 * the very same `_meta["x402/payment"]`, never a new signature, which would charge again.
 */
export interface SettlementRetry {
  /** Resends of the same payment before giving up (default 3). */
  attempts: number
  /**
   * Seconds to wait before a resend when the failure envelope gives no `retry_after` (default 5,
   * the `Retry-After` the service sends with `settlement_unknown` over HTTP).
   */
  defaultWaitSeconds: number
  /**
   * The longest wait before a resend (default {@link MAX_RETRY_AFTER_SECONDS}): three waits stay
   * well under the MCP SDK's 60 s request timeout.
   */
  maxWaitSeconds: number
  /** Waits `ms` milliseconds (tests record the waits instead). */
  sleep: (ms: number) => Promise<unknown>
}

export const SETTLEMENT_RETRY: SettlementRetry = {
  attempts: 3,
  defaultWaitSeconds: 5,
  maxWaitSeconds: MAX_RETRY_AFTER_SECONDS,
  sleep: (ms) => sleep(ms),
}

/** Failure codes that say: send the same payment again later for the result. */
const RESEND_SAME_PAYMENT = new Set(['settlement_unknown', 'payment_in_progress'])

/** The local MCP server's view of the bridge. */
export interface Bridge {
  /**
   * The service's tools (mirrored, fetched afresh) plus {@link SPEND_TOOL}. `complete` is false
   * when the service could not be reached: then only the spend tool is listed.
   */
  listTools(): Promise<{ tools: Tool[]; complete: boolean }>
  /**
   * Runs a tool: the spend tool locally, any other on the service, paying for it.
   *
   * @throws {UnknownToolError} -32602 for a tool name not listed, naming the closest and every tool
   */
  callTool(name: string, args: Record<string, unknown> | undefined): Promise<CallToolResult>
}

/** The listed price of a tool in atomic USDC units, or `undefined` when it has none. */
export function listedPrice(tool: Tool): bigint | undefined {
  const price = tool._meta?.[PRICE_META_KEY] as { amount?: unknown; currency?: unknown } | undefined
  if (price?.currency !== undefined && price.currency !== 'USDC') return undefined
  return parseAtomic(price?.amount)
}

/**
 * A service tool as the bridge lists it: name, schemas, annotations and `_meta` unchanged; the
 * description gets its price (if it lacks it) and how payment works through the bridge.
 */
export function mirrorTool(tool: Tool): Tool {
  const price = listedPrice(tool)
  const display = price === undefined ? undefined : `${formatUsdc(price)} USDC`
  const base = tool.description?.trim() ?? ''
  const priced =
    display === undefined || base.includes(display) ? base : `${base} Price: ${display} per call.`
  return {
    ...tool,
    description:
      `${priced} Through payload-tools-mcp, call it once with its arguments: the bridge pays ` +
      `the price from your wallet, within your spend caps (see ${SPEND_TOOL}).`.trim(),
  }
}

/** The PaymentRequired of an unpaid call's result, if that is what it is. */
function paymentRequiredOf(result: CallToolResult): PaymentRequired | undefined {
  return result.isError && isPaymentRequiredV2(result.structuredContent)
    ? (result.structuredContent as PaymentRequired)
    : undefined
}

/** The service's free input check, when the unpaid call's failure envelope carries a failing one. */
function failedInputCheck(result: CallToolResult): { errors?: unknown[] } | undefined {
  const envelope = result._meta?.[FAILURE_META_KEY] as
    | { input_check?: { valid?: boolean; errors?: unknown[] } }
    | undefined
  return envelope?.input_check?.valid === false ? envelope.input_check : undefined
}

const describeIssues = (errors: unknown[] | undefined): string =>
  (errors ?? [])
    .map((e) => {
      const { path, message } = (e ?? {}) as { path?: string; message?: string }
      return path ? `${path}: ${message}` : `${message}`
    })
    .join('; ')

const codeOf = (result: CallToolResult): string =>
  ((result._meta?.[FAILURE_META_KEY] as { code?: unknown } | undefined)?.code as string) ??
  'unknown'

/** The `retry_after` seconds of a failure envelope, when it gives a readable one. */
const retryAfterOf = (result: CallToolResult): number | undefined => {
  const value = (result._meta?.[FAILURE_META_KEY] as { retry_after?: unknown } | undefined)
    ?.retry_after
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? value : undefined
}

/** The one place an error of the payment flow becomes an `isError` result. */
function toFailure(error: unknown): CallToolResult {
  if (error instanceof BridgeFailure) return failureResult(error)
  if (error instanceof SpendCapError) {
    return failureResult(
      new BridgeFailure('spend_cap_exceeded', error.message, {
        cap: error.cap,
        amount: error.amount.toString(),
        limit: error.limit.toString(),
        spent: error.spent.toString(),
      }),
    )
  }
  if (error instanceof NoPayableRailError) {
    return failureResult(new BridgeFailure('no_payable_rail', error.message))
  }
  if (error instanceof DayFileError) {
    return failureResult(
      new BridgeFailure(
        'day_file_unavailable',
        `MAX_USDC_PER_DAY cannot be checked: ${error.message}. Nothing was signed.`,
      ),
    )
  }
  throw error
}

/** An error's message, with the network cause behind a bare "fetch failed" (e.g. ECONNREFUSED). */
function message(error: unknown): string {
  if (!(error instanceof Error)) return String(error)
  const cause = error.cause
  const detail =
    cause instanceof Error ? ((cause as NodeJS.ErrnoException).code ?? cause.message) : undefined
  return detail && !error.message.includes(detail) ? `${error.message}: ${detail}` : error.message
}

/**
 * The bridge: mirrors the service's `tools/list` and pays each `tools/call` with x402.
 *
 * A call runs in this order, and nothing is signed unless every check before signing passes:
 * 1. the unpaid call, whose answer is the PaymentRequired (and the service's free input check);
 * 2. the offer to pay: `exact`, USDC, a rail of this wallet (`PAYER_RAIL` first);
 * 3. its amount must equal the price `tools/list` advertised;
 * 4. the caps reserve the amount (or refuse);
 * 5. the official x402 client signs; the call is repeated with `_meta["x402/payment"]`;
 * 6. a settled result commits the reservation, anything else releases it; but a
 *    `settlement_unknown` (or `payment_in_progress`) answer commits it (the payment may have
 *    moved) and the same payment is resent, never a new one, after the envelope's `retry_after`
 *    or 5 s (at most 10 s), up to 3 times ({@link SETTLEMENT_RETRY}), then the call fails with
 *    `settlement_unknown`;
 * 7. the result's signed delivery receipt must verify against the service's JWKS and match the
 *    arguments sent, the result received and the payment made; otherwise the result is withheld
 *    (`receipt_missing`, `receipt_invalid`, `receipt_mismatch`; the payment still counts).
 *
 * @example
 * const bridge = createBridge({ remote, wallet, ledger, log: stderrLog })
 * await bridge.callTool('payload_hash', { input: 'abc' })
 */
export function createBridge(parts: BridgeParts): Bridge {
  const { remote, wallet, ledger, log } = parts
  const maxWait = parts.maxRetryAfterSeconds ?? MAX_RETRY_AFTER_SECONDS
  const resend: SettlementRetry = { ...SETTLEMENT_RETRY, ...parts.settlementRetry }
  let listing: Map<string, Tool> | undefined
  let fetching: Promise<Map<string, Tool>> | undefined

  /**
   * Runs an unpaid request; when the service answers 429 with a `Retry-After` of at most
   * `maxWait` seconds, waits that long and runs it once more.
   *
   * @throws {BridgeFailure} `rate_limited` when refused again, or when the wait is too long or
   *   unknown; any other error of `request` unchanged
   */
  async function unpaid<T>(what: string, request: () => Promise<T>): Promise<T> {
    try {
      return await request()
    } catch (error) {
      if (!(error instanceof ServiceRateLimitedError)) throw error
      const wait = error.retryAfterSeconds
      if (wait === undefined || wait > maxWait) throw rateLimited(error, maxWait)
      log(`${what}: rate-limited by the service; retrying once in ${wait} s`)
      await sleep(wait * 1000)
      try {
        return await request()
      } catch (again) {
        if (again instanceof ServiceRateLimitedError) throw rateLimited(again, maxWait, wait)
        throw again
      }
    }
  }

  /** Fetches the service's listing (one request at a time) and keeps it for the price checks. */
  function fetchListing(): Promise<Map<string, Tool>> {
    fetching ??= unpaid('tools/list', () => remote.listTools())
      .then((tools) => {
        listing = new Map(tools.map((t) => [t.name, t]))
        return listing
      })
      .finally(() => {
        fetching = undefined
      })
    return fetching
  }

  async function listTools(): Promise<{ tools: Tool[]; complete: boolean }> {
    try {
      const tools = await fetchListing()
      const mirrored = [...tools.values()].filter((t) => t.name !== SPEND_TOOL).map(mirrorTool)
      return { tools: [...mirrored, spendTool], complete: true }
    } catch (error) {
      log(`cannot list the service's tools: ${message(error)}`)
      return { tools: [spendTool], complete: false }
    }
  }

  async function callTool(
    name: string,
    args: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    if (name === SPEND_TOOL) return spendResult(ledger.snapshot(), wallet.rails)
    let tools: Map<string, Tool>
    try {
      tools = listing ?? (await fetchListing())
    } catch (error) {
      return toFailure(unreachable(error))
    }
    const tool = tools.get(name)
    if (!tool) {
      const names = [...tools.keys()].filter((t) => t !== SPEND_TOOL)
      throw new UnknownToolError(name, [...names, SPEND_TOOL])
    }
    try {
      return await pay(tool, args)
    } catch (error) {
      return toFailure(error)
    }
  }

  async function pay(tool: Tool, args: Record<string, unknown> | undefined) {
    const { name } = tool
    let first: CallToolResult
    try {
      first = await unpaid(name, () => remote.callTool(name, args))
    } catch (error) {
      throw unreachable(error)
    }
    const required = paymentRequiredOf(first)
    // A free result, or a refusal that is not about payment: nothing to pay, pass it on.
    if (!required) return first
    const inputCheck = failedInputCheck(first)
    if (inputCheck) {
      throw new BridgeFailure(
        'invalid_request',
        `Invalid arguments for ${name}: ${describeIssues(inputCheck.errors)}. Nothing was signed ` +
          'or charged.',
        { input_check: inputCheck },
      )
    }
    const offer = chooseOffer(required.accepts, wallet.rails, parts.preferredRail)
    const amount = BigInt(offer.amount)
    const listed = listedPrice(tool)
    if (listed === undefined) {
      throw new BridgeFailure(
        'price_unlisted',
        `tools/list gives no USDC price for ${name}, so the ${formatUsdc(amount)} USDC the ` +
          'service asks cannot be checked. Nothing was signed.',
      )
    }
    if (amount !== listed) {
      throw new BridgeFailure(
        'price_mismatch',
        `${name} asks ${formatUsdc(amount)} USDC on ${offer.network} but tools/list advertised ` +
          `${formatUsdc(listed)} USDC. Nothing was signed.`,
        { amount: offer.amount, listed: listed.toString(), network: offer.network },
      )
    }
    const held = ledger.reserve(offer.network, amount)
    let counted = false
    try {
      let payment: unknown
      try {
        payment = await wallet.sign(required, offer)
      } catch (error) {
        throw new BridgeFailure(
          'signing_failed',
          `Could not sign the payment for ${name} on ${offer.network}: ${message(error)}. ` +
            'Nothing was sent or charged.',
        )
      }
      log(`signed payment for ${name} on ${offer.network} (${formatUsdc(amount)} USDC)`)
      let paid: CallToolResult
      try {
        paid = await remote.callTool(name, args, { [PAYMENT_META_KEY]: payment })
      } catch (error) {
        if (error instanceof ServiceRateLimitedError) {
          // An HTTP answer, not a lost one: the request was refused before it ran (the service
          // never limits paid calls; a proxy in front may), so nothing was charged.
          log(`paid call of ${name} refused with 429; not counted`)
          throw new BridgeFailure(
            'rate_limited',
            `The service refused the paid call of ${name} with HTTP 429 before running it ` +
              `(${error.detail}). ${retryAdvice(error.retryAfterSeconds)} Nothing was charged.`,
            retryDetails(error.retryAfterSeconds),
          )
        }
        // The payment left this process and may have been settled: it counts against the caps.
        ledger.commit(held)
        counted = true
        log(`no answer to the paid call of ${name}; counted as spent: ${message(error)}`)
        throw new BridgeFailure(
          'payment_outcome_unknown',
          `The service did not answer the paid call of ${name} (${message(error)}). The ` +
            `payment of ${formatUsdc(amount)} USDC on ${offer.network} may have been settled; ` +
            'it counts against the spend caps. Check the wallet before calling again.',
        )
      }
      let resent = 0
      while (paid.isError && RESEND_SAME_PAYMENT.has(codeOf(paid))) {
        // The tool ran and the payment may have moved: it counts, whatever comes next.
        if (!counted) ledger.commit(held)
        counted = true
        if (resent === resend.attempts) {
          log(`paid call of ${name}: settlement still unknown after ${resent} resends; giving up`)
          throw settlementUnknown(name, amount, offer.network, resent)
        }
        const wait = Math.min(
          retryAfterOf(paid) ?? resend.defaultWaitSeconds,
          resend.maxWaitSeconds,
        )
        resent += 1
        log(
          `paid call of ${name}: ${codeOf(paid)}; resending the same payment in ${wait} s ` +
            `(retry ${resent} of ${resend.attempts})`,
        )
        await resend.sleep(wait * 1000)
        try {
          paid = await remote.callTool(name, args, { [PAYMENT_META_KEY]: payment })
        } catch (error) {
          log(`no answer to the resent payment for ${name}: ${message(error)}`)
          throw settlementUnknown(name, amount, offer.network, resent, message(error))
        }
      }
      const receipt = paid._meta?.[PAYMENT_RESPONSE_META_KEY] as SettleResponse | undefined
      // The service never releases a result without settling it: an ok result was paid for.
      if (!paid.isError || receipt?.success === true) {
        if (!counted) ledger.commit(held)
        counted = true
        if (!paid.isError) await checkReceipt(tool, args, paid, receipt, offer)
        return paidResult(paid, offer, receipt, log)
      }
      if (resent > 0) {
        log(`resent payment for ${name} refused by the service (${codeOf(paid)}); counted`)
        return refusedAfterUnknown(paid)
      }
      log(`paid call of ${name} refused by the service (${codeOf(paid)}); not counted`)
      return refusedResult(paid)
    } finally {
      if (!counted) ledger.release(held)
    }
  }

  /** The receipt check of a settled result, as a {@link BridgeFailure} when refused. */
  async function checkReceipt(
    tool: Tool,
    args: Record<string, unknown> | undefined,
    paid: CallToolResult,
    settlement: SettleResponse | undefined,
    offer: PaymentRequirements,
  ): Promise<void> {
    try {
      await parts.receipts.check({ tool, args, paid, settlement, offer })
    } catch (error) {
      if (!(error instanceof ReceiptRefused)) throw error
      const display = `${formatUsdc(BigInt(offer.amount))} USDC`
      const { network, transaction } = error.details as { network: string; transaction: string }
      log(`paid call of ${tool.name} withheld (${error.code}): ${error.message}`)
      throw new BridgeFailure(
        error.code,
        `The service settled ${display} on ${network} (transaction ${transaction}) for ` +
          `${tool.name}, but ${error.message}: the result is withheld. The payment counts ` +
          'against the spend caps; keep this receipt to dispute it.',
        error.details,
      )
    }
  }

  return { listTools, callTool }
}

/** A settled result, unchanged, plus the settlement in `_meta` and a text line. */
function paidResult(
  paid: CallToolResult,
  offer: PaymentRequirements,
  receipt: SettleResponse | undefined,
  log: Log,
): CallToolResult {
  const display = `${formatUsdc(BigInt(offer.amount))} USDC`
  const network = receipt?.network ?? offer.network
  const transaction = receipt?.transaction ?? ''
  const rail = railOf(network)
  log(`paid ${display} on ${network}, transaction ${transaction}`)
  return {
    ...paid,
    content: [
      ...(paid.content ?? []),
      {
        type: 'text',
        text: `Paid ${display} on ${rail ? RAIL_LABEL[rail] : network} (${network}), transaction ${transaction}.`,
      },
    ],
    _meta: {
      ...paid._meta,
      [SETTLEMENT_META_KEY]: { network, transaction, amount: offer.amount, display },
    },
  }
}

/** A paid call the service refused (e.g. `facilitator_unavailable`), unchanged, plus a text line. */
function refusedResult(paid: CallToolResult): CallToolResult {
  return {
    ...paid,
    content: [
      ...(paid.content ?? []),
      {
        type: 'text',
        text:
          `The service refused the paid call (${codeOf(paid)}) and reports nothing charged; it ` +
          'does not count against the spend caps.',
      },
    ],
  }
}

/**
 * A paid call whose settlement stayed unknown through every resend of the same payment (or whose
 * resend got no answer): the payment may have moved and counts against the caps.
 */
function settlementUnknown(
  name: string,
  amount: bigint,
  network: string,
  resent: number,
  lastError?: string,
): BridgeFailure {
  const tried = `${resent} resend${resent === 1 ? '' : 's'} of the same payment`
  return new BridgeFailure(
    'settlement_unknown',
    `The service ran ${name}, but the settlement of its ${formatUsdc(amount)} USDC payment on ` +
      `${network} is still unknown after ${tried}` +
      `${lastError === undefined ? '' : ` (the last got no answer: ${lastError})`}: the payment ` +
      'may have moved; it counts against the spend caps. Retrying the same payment later is ' +
      'safe (the service never charges one payment twice), but calling the tool again signs a ' +
      'new payment, which would be charged again: check the wallet first.',
    { resent },
  )
}

/** The refusal of a resent payment whose first settlement's outcome was unknown. */
function refusedAfterUnknown(paid: CallToolResult): CallToolResult {
  return {
    ...paid,
    content: [
      ...(paid.content ?? []),
      {
        type: 'text',
        text:
          `The service refused the resent payment (${codeOf(paid)}) after the outcome of its ` +
          'first settlement was unknown: the payment may have moved, so it counts against the ' +
          'spend caps. Check the wallet before calling again.',
      },
    ],
  }
}

/** The service did not answer: the failure every unreachable case becomes (a refusal stays). */
function unreachable(error: unknown): BridgeFailure {
  if (error instanceof BridgeFailure) return error
  return new BridgeFailure(
    'service_unreachable',
    `The Payload Tools service is unreachable (${message(error)}). Check PAYLOAD_TOOLS_URL and ` +
      'your network. Nothing was signed or charged.',
  )
}

const retryAdvice = (seconds: number | undefined): string =>
  seconds === undefined
    ? 'Retry later (the service gave no Retry-After).'
    : `Retry after ${seconds} s.`

const retryDetails = (seconds: number | undefined): Record<string, unknown> =>
  seconds === undefined ? {} : { retry_after: seconds }

/**
 * The service refused an unpaid request with 429 `rate_limited` and the bridge gives up: the wait
 * is unknown or longer than `maxWait` seconds, or the one retry after `waited` seconds was
 * refused too. `retry_after` (seconds) is in the envelope when the service gave one.
 */
function rateLimited(
  error: ServiceRateLimitedError,
  maxWait: number,
  waited?: number,
): BridgeFailure {
  const wait = error.retryAfterSeconds
  const advice =
    waited !== undefined
      ? `The bridge waited ${waited} s and retried once, in vain. ${retryAdvice(wait)}`
      : wait === undefined
        ? retryAdvice(wait)
        : `Retry after ${wait} s (longer than the ${maxWait} s the bridge waits by itself).`
  return new BridgeFailure(
    'rate_limited',
    `The Payload Tools service is rate-limiting this client (${error.detail}). ${advice} ` +
      'Nothing was signed or charged.',
    retryDetails(wait),
  )
}
