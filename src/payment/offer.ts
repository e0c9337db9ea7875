import type { PaymentRequired, PaymentRequirements, ResourceInfo } from '@x402/core/types'
import type { ToolDefinition } from '../tools/types.js'
import type { LiveState } from './facilitator.js'
import { withPaymentIdentifier } from './idempotency.js'

/** What a paid call offers: the requirements of every live rail, and its PaymentRequired. */
export interface Offer {
  /** PaymentRequirements of every live rail, in rail order. */
  requirements: PaymentRequirements[]
  /** Extensions declared in the PaymentRequired (bazaar info, `payment-identifier`). */
  extensions: Record<string, unknown>
  /**
   * The PaymentRequired of an unpaid request: built once per facilitator state, transport, tool
   * and resource, and shared: callers must not change it.
   */
  unpaid(): Promise<PaymentRequired>
  /** A PaymentRequired whose `error` states why a payment was refused (built per refusal). */
  refusal(error: string): Promise<PaymentRequired>
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
 * request until the facilitators' `/supported` changes (a new LiveState): it is built once per
 * state, transport, tool and resource, as crawlers and agents probe it far more often than they
 * pay.
 *
 * @example
 * const offerOf = createOffers()
 * const offer = await offerOf(await link.ready(), call)
 * throw new PaymentRequiredError('payment_required', '…', await offer.unpaid())
 */
export function createOffers(): (state: LiveState, call: OfferedCall) => Promise<Offer> {
  const cache = new WeakMap<LiveState, Map<string, Promise<PaymentRequired>>>()
  return async function offerOf(state, call) {
    const requirements = await state.accepts(call.tool.price)
    const extensions = withPaymentIdentifier(call.extensions)
    const refusal = (error: string) =>
      state.server.createPaymentRequiredResponse(requirements, call.resource, error, extensions)
    const unpaid = () => {
      let perState = cache.get(state)
      if (!perState) {
        perState = new Map()
        cache.set(state, perState)
      }
      const key = `${call.transport} ${call.tool.id} ${call.resource.url}`
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
