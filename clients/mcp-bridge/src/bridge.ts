import { setTimeout as sleep } from 'node:timers/promises'
import type { CallToolResult, Tool } from '@modelcontextprotocol/client'
import { isPaymentRequiredV2 } from '@x402/core/schemas'
import type {
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
  SettleResponse,
} from '@x402/core/types'
import {
  CHANNEL_SCHEME,
  type ChannelWallet,
  DepositCapError,
  type OpenChannel,
  shortChannel,
} from './channels.js'
import { DayFileError } from './day-file.js'
import { BridgeFailure, FAILURE_META_KEY, failureResult } from './failures.js'
import { type Reservation, SpendCapError, type SpendLedger } from './ledger.js'
import type { Log } from './log.js'
import { RAIL_LABEL, type RailId, railOf } from './rails.js'
import { MAX_RETRY_AFTER_SECONDS, ServiceRateLimitedError } from './rate-limit.js'
import { type ReceiptChecker, ReceiptRefused, TOOL_ID_META_KEY } from './receipts.js'
import { REFUND_TOOL, refundTool } from './refund-tool.js'
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
  /**
   * Prepaid channels (x402 `batch-settlement` on Base) for the Base key, when `MAX_USDC_DEPOSIT`
   * allows a deposit: a service that offers them is paid by voucher. Absent: `exact` only.
   */
  channels?: ChannelWallet
  /** The service's base URL: a channel's refund goes to one of its paid HTTP routes. */
  serviceUrl?: string
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
  const { channels } = parts
  const localTools = channels ? [spendTool, refundTool] : [spendTool]

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
      const mirrored = [...tools.values()].filter((t) => !LOCAL_TOOLS.has(t.name)).map(mirrorTool)
      return { tools: [...mirrored, ...localTools], complete: true }
    } catch (error) {
      log(`cannot list the service's tools: ${message(error)}`)
      return { tools: localTools, complete: false }
    }
  }

  async function callTool(
    name: string,
    args: Record<string, unknown> | undefined,
  ): Promise<CallToolResult> {
    if (name === SPEND_TOOL) {
      return spendResult(
        ledger.snapshot(),
        wallet.rails,
        channels ? { cap: channels.depositCap, open: await openChannel() } : undefined,
      )
    }
    if (name === REFUND_TOOL && channels) return refund(channels)
    let tools: Map<string, Tool>
    try {
      tools = listing ?? (await fetchListing())
    } catch (error) {
      return toFailure(unreachable(error))
    }
    const tool = tools.get(name)
    if (!tool) {
      const names = [...tools.keys()].filter((t) => !LOCAL_TOOLS.has(t))
      throw new UnknownToolError(name, [...names, ...localTools.map((t) => t.name)])
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
    const { offer, byChannel } = choosePayment(name, required)
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
    // The caps count the price of the call, whether paid `exact` or from a channel; a deposit is
    // not spent (it stays the payer's in the escrow until charged) and has its own cap.
    const held = ledger.reserve(offer.network, amount)
    const paying = { tool, args, required, offer, held }
    if (byChannel && channels) {
      return channels.exclusive(() => payReserved({ ...paying, channels }))
    }
    return payReserved(paying)
  }

  /**
   * The payment to make: the wallet's `exact` offer (`PAYER_RAIL` first), or, when that is on
   * Base and the service also offers a prepaid channel there within `MAX_USDC_DEPOSIT`, the
   * channel's. A channel that cannot be used is logged and `exact` is paid.
   *
   * @throws {NoPayableRailError} when neither can be paid
   */
  function choosePayment(
    name: string,
    required: PaymentRequired,
  ): { offer: PaymentRequirements; byChannel: boolean } {
    let exact: PaymentRequirements | undefined
    let none: unknown
    try {
      exact = chooseOffer(required.accepts, wallet.rails, parts.preferredRail)
    } catch (error) {
      none = error
    }
    const onBase = exact === undefined || railOf(exact.network) === 'base'
    const choice = channels && onBase ? channels.choose(required.accepts) : undefined
    if (choice?.offer) return { offer: choice.offer, byChannel: true }
    if (choice) log(`${name}: paying with exact: ${choice.reason}`)
    if (exact === undefined) throw none
    return { offer: exact, byChannel: false }
  }

  /**
   * Signs, sends and answers a call whose price is reserved: see {@link createBridge}. With
   * `channels`, the payment is a deposit or a voucher; a refusal the channel can cure (a
   * corrective 402 that resyncs its record, `channel_busy`) is signed again, at most
   * {@link CHANNEL_RESIGNS} times, within the same reservation.
   */
  async function payReserved(call: {
    tool: Tool
    args: Record<string, unknown> | undefined
    required: PaymentRequired
    offer: PaymentRequirements
    held: Reservation
    channels?: ChannelWallet
  }): Promise<CallToolResult> {
    const { tool, args, required, offer, held } = call
    const { name } = tool
    const amount = BigInt(offer.amount)
    let counted = false
    const count = () => {
      if (!counted) ledger.commit(held)
      counted = true
    }
    try {
      let payment: PaymentPayload
      let paid: CallToolResult
      let resent = 0
      for (let resigned = 0; ; resigned++) {
        payment = await signPayment(name, required, offer, call.channels)
        paid = await sendPaid(name, args, payment, amount, offer.network, count)
        while (paid.isError && RESEND_SAME_PAYMENT.has(codeOf(paid))) {
          // The tool ran and the payment may have moved: it counts, whatever comes next.
          count()
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
        const corrective = call.channels && resent === 0 ? paymentRequiredOf(paid) : undefined
        if (!corrective || resigned === CHANNEL_RESIGNS) break
        const next = await call.channels?.refused(payment, corrective).catch((error: unknown) => {
          log(`paid call of ${name}: the channel could not resync: ${message(error)}`)
          return undefined
        })
        if (!next) break
        log(
          `paid call of ${name}: ${next === 'busy' ? 'the channel is busy with another call' : "the channel's record was resynced from the service"}; ` +
            `signing again (${resigned + 1} of ${CHANNEL_RESIGNS}), nothing was charged`,
        )
        if (next === 'busy') await resend.sleep(CHANNEL_BUSY_WAIT_MS)
      }
      const receipt = paid._meta?.[PAYMENT_RESPONSE_META_KEY] as SettleResponse | undefined
      // The service never releases a result without settling it: an ok result was paid for.
      if (!paid.isError || receipt?.success === true) {
        count()
        const channel =
          call.channels && receipt?.success
            ? await call.channels.settled(payment, receipt).catch((error: unknown) => {
                log(`paid call of ${name}: the channel record was not updated: ${message(error)}`)
                return undefined
              })
            : undefined
        if (!paid.isError) await checkReceipt(tool, args, paid, receipt, offer, payment)
        return paidResult(paid, offer, receipt, log, payment, channel)
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

  /** Signs `offer` with the wallet (`exact`) or the channel (deposit or voucher). */
  async function signPayment(
    name: string,
    required: PaymentRequired,
    offer: PaymentRequirements,
    channel: ChannelWallet | undefined,
  ): Promise<PaymentPayload> {
    let payment: PaymentPayload
    try {
      payment = channel ? await channel.sign(required, offer) : await wallet.sign(required, offer)
    } catch (error) {
      if (error instanceof DepositCapError) {
        throw new BridgeFailure(
          'deposit_cap_exceeded',
          `Could not pay ${name} from a prepaid channel: ${error.message}. Raise ` +
            'MAX_USDC_DEPOSIT, or set it to 0 to pay every call with exact. Nothing was signed.',
        )
      }
      throw new BridgeFailure(
        'signing_failed',
        `Could not sign the payment for ${name} on ${offer.network}: ${message(error)}. ` +
          'Nothing was sent or charged.',
      )
    }
    log(
      `signed payment for ${name} on ${offer.network} (${formatUsdc(BigInt(offer.amount))} USDC` +
        `${describeChannelPayment(payment)})`,
    )
    return payment
  }

  /**
   * Sends a signed payment. No answer at all means the payment may have moved: it counts
   * (`count`) and the call fails `payment_outcome_unknown`; a 429 is a refusal before the call
   * ran, nothing charged.
   */
  async function sendPaid(
    name: string,
    args: Record<string, unknown> | undefined,
    payment: PaymentPayload,
    amount: bigint,
    network: string,
    count: () => void,
  ): Promise<CallToolResult> {
    try {
      return await remote.callTool(name, args, { [PAYMENT_META_KEY]: payment })
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
      count()
      log(`no answer to the paid call of ${name}; counted as spent: ${message(error)}`)
      throw new BridgeFailure(
        'payment_outcome_unknown',
        `The service did not answer the paid call of ${name} (${message(error)}). The ` +
          `payment of ${formatUsdc(amount)} USDC on ${network} may have been settled; ` +
          'it counts against the spend caps. Check the wallet before calling again.',
      )
    }
  }

  /** The open channel for the spend tool; a record that cannot be read shows none. */
  async function openChannel(): Promise<OpenChannel | undefined> {
    try {
      return await channels?.open()
    } catch (error) {
      log(`cannot read the channel record: ${message(error)}`)
      return undefined
    }
  }

  /**
   * The refund tool: the official client's refund of the open channel through one of the
   * service's paid HTTP routes (the refund flow is served on GET there); nothing is charged.
   */
  async function refund(wallet: ChannelWallet): Promise<CallToolResult> {
    const [first] = listing ? [...listing.values()] : []
    const id = first?._meta?.[TOOL_ID_META_KEY]
    const url = `${parts.serviceUrl}/${typeof id === 'string' ? id : 'hash'}`
    try {
      const { settlement, channel } = await wallet.refund(url)
      return refundResult(settlement, channel, log)
    } catch (error) {
      log(`refund refused: ${message(error)}`)
      return failureResult(
        new BridgeFailure(
          'refund_failed',
          `No refund: ${message(error)}. Nothing moved; the channel keeps its deposit.`,
        ),
      )
    }
  }

  /** The receipt check of a settled result, as a {@link BridgeFailure} when refused. */
  async function checkReceipt(
    tool: Tool,
    args: Record<string, unknown> | undefined,
    paid: CallToolResult,
    settlement: SettleResponse | undefined,
    offer: PaymentRequirements,
    payment: PaymentPayload,
  ): Promise<void> {
    try {
      await parts.receipts.check({ tool, args, paid, settlement, offer, payment })
    } catch (error) {
      if (!(error instanceof ReceiptRefused)) throw error
      const display = `${formatUsdc(BigInt(offer.amount))} USDC`
      const { network, transaction } = error.details as { network: string; transaction: string }
      log(`paid call of ${tool.name} withheld (${error.code}): ${error.message}`)
      throw new BridgeFailure(
        error.code,
        `The service settled ${display} on ${network} (${transaction ? `transaction ${transaction}` : `voucher on channel ${shortChannel(channelIdOf(payment))}`}) for ` +
          `${tool.name}, but ${error.message}: the result is withheld. The payment counts ` +
          'against the spend caps; keep this receipt to dispute it.',
        error.details,
      )
    }
  }

  return { listTools, callTool }
}

/** Signatures of a channel payment the service refused but the channel can cure, per call. */
export const CHANNEL_RESIGNS = 2
/** How long to wait before signing again on a busy channel (another call of this payer's). */
export const CHANNEL_BUSY_WAIT_MS = 1000
/** The bridge's own tools, never mirrored from the service. */
const LOCAL_TOOLS = new Set([SPEND_TOOL, REFUND_TOOL])

/** The channel id a channel payment names; empty for `exact`. */
const channelIdOf = (payment: PaymentPayload): string =>
  (payment.payload as { voucher?: { channelId?: string } }).voucher?.channelId ?? ''

/** What a channel payment was, for the log: `, by voucher on channel 0x…`; empty for `exact`. */
function describeChannelPayment(payment: PaymentPayload): string {
  if (payment.accepted.scheme !== CHANNEL_SCHEME) return ''
  const payload = payment.payload as {
    type?: string
    voucher?: { channelId?: string }
    deposit?: { amount?: string }
  }
  const channel = shortChannel(payload.voucher?.channelId ?? '')
  if (payload.type === 'deposit') {
    return `, with a deposit of ${formatUsdc(BigInt(payload.deposit?.amount ?? '0'))} USDC into channel ${channel}`
  }
  return `, by voucher on channel ${channel}`
}

/**
 * A settled result, unchanged, plus the settlement in `_meta` and a text line. A channel
 * payment's settlement names the channel and what it holds and has been charged (from the local
 * record just updated), and its deposit when it made one.
 */
function paidResult(
  paid: CallToolResult,
  offer: PaymentRequirements,
  receipt: SettleResponse | undefined,
  log: Log,
  payment: PaymentPayload,
  channel: OpenChannel | undefined,
): CallToolResult {
  const display = `${formatUsdc(BigInt(offer.amount))} USDC`
  const network = receipt?.network ?? offer.network
  const transaction = receipt?.transaction ?? ''
  const rail = railOf(network)
  const where = `${rail ? RAIL_LABEL[rail] : network} (${network})`
  const settlement: Record<string, unknown> = {
    network,
    transaction,
    amount: offer.amount,
    display,
  }
  let text = `Paid ${display} on ${where}, transaction ${transaction}.`
  if (offer.scheme === CHANNEL_SCHEME) {
    const deposit = (payment.payload as { type?: string; deposit?: { amount?: string } }).deposit
    const id = (payment.payload as { voucher?: { channelId?: string } }).voucher?.channelId ?? ''
    settlement.scheme = CHANNEL_SCHEME
    settlement.channel = {
      id: id.toLowerCase(),
      ...(channel
        ? {
            balance: formatUsdc(channel.balance),
            charged: formatUsdc(channel.charged),
            remaining: formatUsdc(left(channel)),
          }
        : {}),
    }
    const state = channel
      ? ` (${formatUsdc(channel.charged)} of its ${formatUsdc(channel.balance)} USDC charged, ${formatUsdc(left(channel))} left)`
      : ''
    text = deposit?.amount
      ? `Paid ${display} on ${where} from prepaid channel ${shortChannel(id)}${state}, after a deposit of ${formatUsdc(BigInt(deposit.amount))} USDC into it, transaction ${transaction}.`
      : `Paid ${display} on ${where} by voucher from prepaid channel ${shortChannel(id)}${state}; no transaction of its own (the service claims vouchers in batches).`
    if (deposit?.amount) settlement.deposit = deposit.amount
  }
  log(`paid ${display} on ${network}${transaction ? `, transaction ${transaction}` : ''}`)
  return {
    ...paid,
    content: [...(paid.content ?? []), { type: 'text', text }],
    _meta: { ...paid._meta, [SETTLEMENT_META_KEY]: settlement },
  }
}

/** What a channel holds and was not charged. */
const left = (channel: OpenChannel): bigint =>
  channel.balance > channel.charged ? channel.balance - channel.charged : 0n

/** The refund tool's result: the refund's transaction, and what the record said was left. */
function refundResult(
  settlement: SettleResponse,
  channel: OpenChannel | undefined,
  log: Log,
): CallToolResult {
  const refunded = channel ? left(channel) : undefined
  const report = {
    ok: true,
    network: settlement.network,
    transaction: settlement.transaction,
    ...(channel ? { channel: channel.id } : {}),
    ...(refunded === undefined ? {} : { refunded: formatUsdc(refunded) }),
  }
  log(
    `refunded channel ${channel ? shortChannel(channel.id) : ''} on ${settlement.network}, transaction ${settlement.transaction}`,
  )
  const text =
    `Refunded${channel ? ` channel ${shortChannel(channel.id)}` : ' the channel'} on ` +
    `${settlement.network}, transaction ${settlement.transaction}: ` +
    `${refunded === undefined ? 'what' : `${formatUsdc(refunded)} USDC,`} the service had not ` +
    'charged, is back in the wallet; the service keeps what it charged.'
  return { content: [{ type: 'text', text }], structuredContent: report }
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
