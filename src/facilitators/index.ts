import type { FacilitatorClient } from '@x402/core/server'
import { type FacilitatorCredentials, facilitatorAuth } from './auth.js'
import { createHttpFacilitatorClient } from './client.js'
import { createFacilitatorRouter, type FacilitatorRouter } from './router.js'
import type { FacilitatorAuthMode } from './types.js'

export type { ApiKey, FacilitatorCredentials } from './auth.js'
export { cdpKeySecret, payaiKeySecret } from './auth.js'
export { failureKind, httpStatusOf, neverReached, shortReason } from './failures.js'
export type { FacilitatorRouter } from './router.js'
export { createFacilitatorRouter } from './router.js'
export type {
  FacilitatorAuthMode,
  FacilitatorReport,
  FacilitatorRoutes,
  FacilitatorState,
} from './types.js'

/** One configured facilitator: FACILITATOR_URL's entry and FACILITATOR_AUTH's at the same place. */
export interface FacilitatorSpec {
  /** Base URL, without a trailing slash. */
  url: string
  auth: FacilitatorAuthMode
}

export interface FacilitatorsOptions {
  /** In order of preference; empty: no facilitator (every paid call fails closed). */
  facilitators: readonly FacilitatorSpec[]
  /** FACILITATOR_TIMEOUT_MS, in milliseconds: each verify and `/supported` request. */
  timeoutMs: number
  /** FACILITATOR_SETTLE_TIMEOUT_MS, in milliseconds: one settlement; default `timeoutMs`. */
  settleTimeoutMs?: number
  /** The API keys of the auth modes in use; each goes only to the facilitators of its mode. */
  credentials: FacilitatorCredentials
  /**
   * Wraps each facilitator's client, given the host of its URL (the operator metrics time every
   * request with it: `timedFacilitator`); absent: the clients as they are.
   */
  wrap?: (client: FacilitatorClient, host: string) => FacilitatorClient
}

/**
 * The service's facilitators: an HTTP client per configured facilitator, each with its own auth
 * (a CDP or PayAI key goes only to the facilitators whose FACILITATOR_AUTH names it), behind one
 * router that serves each rail through the first facilitator offering it and fails over as
 * {@link FacilitatorRouter} says. Waits on no I/O.
 *
 * @returns the router, or undefined when no facilitator is configured
 * @throws {Error} when a facilitator's auth mode lacks its keys or a key is malformed (the message
 *   names the variables, never a secret)
 * @example
 * const router = createFacilitators({
 *   facilitators: [{ url: 'https://api.cdp.coinbase.com/platform/v2/x402', auth: 'cdp' }, { url: 'https://facilitator.payai.network', auth: 'none' }],
 *   timeoutMs: 10_000,
 *   credentials: { cdp: { id: process.env.CDP_API_KEY_ID, secret: process.env.CDP_API_KEY_SECRET } },
 * })
 */
export function createFacilitators(options: FacilitatorsOptions): FacilitatorRouter | undefined {
  if (options.facilitators.length === 0) return undefined
  return createFacilitatorRouter({
    timeoutMs: options.timeoutMs,
    ...(options.settleTimeoutMs ? { settleTimeoutMs: options.settleTimeoutMs } : {}),
    facilitators: options.facilitators.map(({ url, auth }) => {
      const host = new URL(url).host
      const client = createHttpFacilitatorClient({
        url,
        timeoutMs: options.timeoutMs,
        ...(options.settleTimeoutMs ? { settleTimeoutMs: options.settleTimeoutMs } : {}),
        auth: facilitatorAuth(auth, url, options.credentials),
      })
      return { host, auth, client: options.wrap ? options.wrap(client, host) : client }
    }),
  })
}
