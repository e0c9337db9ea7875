import type {
  PaymentPayload,
  PaymentRequired,
  PaymentRequirements,
  ResourceInfo,
} from '@x402/core/types'
import type { LiveState } from '../facilitators/link.js'
import type { Receipts } from '../receipts/index.js'
import type { ToolRunner } from '../runner/runner.js'
import { usdcDecimal } from '../tools/price.js'
import type { ToolDefinition } from '../tools/types.js'
import { type InputCheck, PaymentRequiredError } from './errors.js'
import { withPaymentIdentifier } from './idempotency.js'
import { freeInputCheck } from './input.js'
import { requestPoints } from './quota.js'
import type { PaidCall } from './types.js'

/** What a paid call offers: the requirements of every live rail, and its PaymentRequired. */
export interface Offer {
  /** PaymentRequirements of every live rail, in rail order. */
  requirements: PaymentRequirements[]
  /**
   * Extensions declared in the PaymentRequired (bazaar info, `payment-identifier`,
   * `offer-receipt`); shared by the calls of a tool: callers must not change it.
   */
  extensions: Record<string, unknown>
  /**
   * The PaymentRequired of an unpaid request: built once per facilitator state, transport, tool,
   * resource and set of schemes offered, and shared: callers must not change it.
   */
  unpaid(): Promise<PaymentRequired>
  /**
   * A PaymentRequired whose `error` states why a payment was refused (built per refusal); given
   * the payment, its scheme may add what the payer needs to recover (a `batch-settlement`
   * channel's state after a cumulative mismatch).
   */
  refusal(error: string, payment?: PaymentPayload): Promise<PaymentRequired>
}

/** The parts of a call that decide its offer. */
export interface OfferedCall {
  tool: ToolDefinition
  transport: 'http' | 'mcp'
  resource: ResourceInfo
  /** The tool's own PaymentRequired extensions (bazaar discovery info), if any. */
  extensions?: Record<string, unknown>
}

/**
 * The offers of the payment gate. The unpaid PaymentRequired of a tool is the same for every
 * request until the facilitators' `/supported` changes (a new LiveState) or the receipts sign
 * their offers again (a new `offerEpoch`: the official `offer-receipt` extension's signed offers
 * travel in it): it is built once per state, epoch, transport, tool and resource, as crawlers and
 * agents probe it far more often than they pay.
 *
 * @param receipts - the service's receipts: their `offer-receipt` declaration goes in every 402
 * @example
 * const offerOf = createOffers(receipts)
 * const offer = await offerOf(await link.ready(), call)
 * throw new PaymentRequiredError('payment_required', '…', await offer.unpaid())
 */
export function createOffers(
  receipts?: Receipts,
): (state: LiveState, call: OfferedCall) => Promise<Offer> {
  // Per state, the PaymentRequired of the current offer epoch only: a new epoch starts afresh.
  const cache = new WeakMap<
    LiveState,
    { epoch: number; built: Map<string, Promise<PaymentRequired>> }
  >()
  // Per tool's own extensions object (one per tool and transport): the same for every call.
  const extensionsBuilt = new WeakMap<object, Record<string, unknown>>()
  const noExtensions = {}
  const extensionsOf = (own: Record<string, unknown> = noExtensions) => {
    let extensions = extensionsBuilt.get(own)
    if (!extensions) {
      extensions = { ...withPaymentIdentifier(own), ...receipts?.offerReceipt.declaration }
      extensionsBuilt.set(own, extensions)
    }
    return extensions
  }
  return async function offerOf(state, call) {
    const requirements = await state.accepts(call.tool.price)
    const extensions = extensionsOf(call.extensions)
    const refusal = (error: string, payment?: PaymentPayload) =>
      state.server.createPaymentRequiredResponse(
        requirements,
        call.resource,
        error,
        // A copy: the SDK writes each extension's enriched declaration into the object it gets.
        { ...extensions },
        undefined,
        payment,
      )
    const unpaid = () => {
      const epoch = receipts?.offerEpoch() ?? 0
      let entry = cache.get(state)
      if (entry?.epoch !== epoch) {
        entry = { epoch, built: new Map() }
        cache.set(state, entry)
      }
      const perState = entry.built
      // The schemes offered change without a new state (an escrow check that passes later).
      const offered = requirements.map((r) => `${r.scheme}@${r.network}`).join(',')
      const key = `${call.transport} ${call.tool.id} ${call.resource.url} ${offered}`
      let built = perState.get(key)
      if (!built) {
        built = refusal('Payment required')
        built.catch(() => perState.delete(key))
        perState.set(key, built)
      }
      return built
    }
    return { requirements, extensions, unpaid, refusal }
  }
}

/**
 * The answer to a call without payment: 402 `payment_required` with every live rail, and the free
 * check of the body that came with it (a large body pays the rest of its rate-limit points first:
 * the request's first point was taken where it arrived).
 *
 * @returns the error to throw
 * @throws the quota's refusal (429) when the body's points are over the client's limit
 * @example throw await unpaidRefusal(call, offer, runner)
 */
export async function unpaidRefusal(
  call: PaidCall,
  offer: Offer,
  runner: ToolRunner,
): Promise<PaymentRequiredError> {
  let inputCheck: InputCheck | undefined
  if (call.source && call.source.body.length > 0) {
    const rest = requestPoints(call.source.body.length) - 1
    if (call.prepaid === undefined && rest > 0) await call.quota?.charge(rest)
    inputCheck = await freeInputCheck(runner, call.tool, call.source)
  }
  return new PaymentRequiredError(
    'payment_required',
    unpaidMessage(call.tool, inputCheck),
    await offer.unpaid(),
    inputCheck ? { inputCheck } : {},
  )
}

/** Per tool, its price as {@link unpaidMessage} states it: formatted once, read on every 402. */
const prices = new WeakMap<ToolDefinition, string>()

/**
 * The `error` of an unpaid call's 402: what is wrong with the body first, when the free check
 * refused it (paying would not help), then the price in USDC.
 *
 * @example
 * unpaidMessage(hmacTool, undefined) // 'Payment required: /hmac costs 0.001 USDC'
 * unpaidMessage(hmacTool, { valid: false, errors: [{ path: '/key', message: 'Required (expected string)' }] })
 * // 'Invalid body, fix it before paying: /key Required (expected string). /hmac costs 0.001 USDC'
 */
export function unpaidMessage(tool: ToolDefinition, inputCheck: InputCheck | undefined): string {
  let price = prices.get(tool)
  if (price === undefined) {
    price = `${tool.path} costs ${usdcDecimal(tool.price)} USDC`
    prices.set(tool, price)
  }
  if (inputCheck?.valid !== false) return `Payment required: ${price}`
  const shown = inputCheck.errors.slice(0, 5).map((i) => `${i.path || '/'} ${i.message}`)
  const more = inputCheck.errors.length > 5 ? ` (and ${inputCheck.errors.length - 5} more)` : ''
  return `Invalid body, fix it before paying: ${shown.join('; ')}${more}. ${price}`
}
