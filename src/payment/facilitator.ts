import {
  type FacilitatorClient,
  HTTPFacilitatorClient,
  x402ResourceServer,
} from '@x402/core/server'
import type { PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import { ExactSvmScheme } from '@x402/svm/exact/server'
import { describeError, logger } from '../logger.js'
import { FacilitatorUnavailableError } from './errors.js'
import { priceOn, type Rail } from './rails.js'

/**
 * Seconds a client has to complete a payment (PaymentRequirements.maxTimeoutSeconds): an EIP-3009
 * authorization's `validBefore` and a Solana transaction's lifetime follow it, so a paid call must
 * settle within it.
 */
export const MAX_TIMEOUT_SECONDS = 60

/** How often a healthy link re-reads the facilitator's `/supported`, in milliseconds. */
export const SUPPORTED_REFRESH_MS = 5 * 60_000
/** After a failed `/supported`, calls fail fast for this long before the next attempt, in ms. */
export const SUPPORTED_RETRY_MS = 2_000

/**
 * What the facilitator supports right now: a resource server initialised from its `/supported`,
 * and the configured rails it can settle.
 */
export interface LiveState {
  server: x402ResourceServer
  /** Configured rails that the facilitator supports (SVM ones carry its feePayer). */
  liveRails: Rail[]
  /** PaymentRequirements per atomic price, one per live rail, in rail order. */
  accepts(atomicPrice: string): Promise<PaymentRequirements[]>
}

/** Health of the link, for `/health`. */
export interface FacilitatorStatus {
  state: 'unconfigured' | 'ok' | 'unavailable'
  url?: string
  /** Epoch ms of the last successful `/supported`. */
  lastOkAt?: number
  lastError?: string
  rails: { id: Rail['id']; network: string; live: boolean }[]
}

/**
 * The service's link to its x402 facilitator: the `HTTPFacilitatorClient` (each request bounded
 * by `timeoutMs`) and the resource server built on its `/supported`.
 *
 * Unlike the SDK's own middleware, this never exits the process or throws at start when the
 * facilitator is down or lacks a network: a rail it does not support is left out of every 402,
 * and with no rail left every paid call fails closed with {@link FacilitatorUnavailableError}.
 */
export interface FacilitatorLink {
  /** The client used for verify and settle. */
  client: FacilitatorClient | undefined
  /**
   * The current live state, loading `/supported` if needed.
   *
   * @throws {FacilitatorUnavailableError} when unconfigured, unreachable, or no rail is live
   */
  ready(): Promise<LiveState>
  status(): FacilitatorStatus
  /** Records the outcome of a verify or settle call, so that `status()` reflects live traffic. */
  observe(error?: unknown): void
}

/** Options of {@link createFacilitatorLink}. */
export interface FacilitatorLinkOptions {
  /** Facilitator base URL; undefined = unconfigured (fail-closed). */
  url: string | undefined
  /** Bound for each facilitator HTTP request, in milliseconds. */
  timeoutMs: number
  /** Configured rails in advertising order. */
  rails: Rail[]
  /** Seconds a client has to complete payment (PaymentRequirements.maxTimeoutSeconds). */
  maxTimeoutSeconds?: number
  /** Injected client (tests of this adapter); defaults to an HTTPFacilitatorClient on `url`. */
  client?: FacilitatorClient
  /** Wraps the client, e.g. to time its requests (the operator metrics' `timedFacilitator`). */
  wrapClient?: (client: FacilitatorClient) => FacilitatorClient
  now?: () => number
}

/**
 * Creates the facilitator link.
 *
 * @example
 * const link = createFacilitatorLink({ url: 'https://facilitator.example', timeoutMs: 10_000, rails })
 * const { accepts } = await link.ready()
 */
export function createFacilitatorLink(options: FacilitatorLinkOptions): FacilitatorLink {
  const now = options.now ?? Date.now
  const maxTimeoutSeconds = options.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS
  const plain =
    options.client ??
    (options.url
      ? new HTTPFacilitatorClient({ url: options.url, timeoutMs: options.timeoutMs })
      : undefined)
  const client = plain && options.wrapClient ? options.wrapClient(plain) : plain

  let live: LiveState | undefined
  let lastOkAt: number | undefined
  let lastFailAt: number | undefined
  let lastError: string | undefined
  let inFlight: Promise<LiveState> | undefined

  async function load(c: FacilitatorClient): Promise<LiveState> {
    // A fresh server per refresh: x402ResourceServer.initialize() clears its maps before it
    // refetches, which would make concurrent requests see "unsupported" mid-refresh.
    const server = new x402ResourceServer(c)
    for (const rail of options.rails) {
      server.register(rail.network, rail.id === 'evm' ? new ExactEvmScheme() : new ExactSvmScheme())
    }
    await server.initialize()
    const liveRails = options.rails.filter((rail) => {
      const kind = server.getSupportedKind(2, rail.network, 'exact')
      return (
        kind !== undefined && (rail.id !== 'solana' || typeof kind.extra?.feePayer === 'string')
      )
    })
    const cache = new Map<string, Promise<PaymentRequirements[]>>()
    return {
      server,
      liveRails,
      accepts(atomicPrice) {
        let built = cache.get(atomicPrice)
        if (!built) {
          built = Promise.all(
            liveRails.map(async (rail) => {
              const [req] = await server.buildPaymentRequirements({
                scheme: 'exact',
                network: rail.network,
                payTo: rail.payTo,
                price: priceOn(rail, atomicPrice),
                maxTimeoutSeconds,
              })
              if (!req) throw new Error(`no requirements built for ${rail.network}`)
              return req
            }),
          )
          cache.set(atomicPrice, built)
        }
        return built
      },
    }
  }

  function refresh(c: FacilitatorClient): Promise<LiveState> {
    inFlight ??= load(c)
      .then((state) => {
        const wasDown = live === undefined
        live = state
        lastOkAt = now()
        lastError = undefined
        if (wasDown) {
          logger.info(
            { rails: state.liveRails.map((r) => r.network) },
            'facilitator /supported loaded',
          )
        }
        return state
      })
      .catch((error: unknown) => {
        lastFailAt = now()
        lastError = describeError(error)
        logger.warn({ err: lastError }, 'facilitator /supported failed')
        throw new FacilitatorUnavailableError('Payment facilitator is unavailable')
      })
      .finally(() => {
        inFlight = undefined
      })
    return inFlight
  }

  return {
    client,
    async ready() {
      if (!client) throw new FacilitatorUnavailableError('No payment facilitator is configured')
      if (live) {
        if (lastOkAt !== undefined && now() - lastOkAt > SUPPORTED_REFRESH_MS) {
          // Stale but usable: refresh in the background, serve the last good state meanwhile.
          refresh(client).catch(() => {})
        }
        if (live.liveRails.length === 0) {
          throw new FacilitatorUnavailableError('The facilitator supports none of our rails')
        }
        return live
      }
      if (lastFailAt !== undefined && now() - lastFailAt < SUPPORTED_RETRY_MS) {
        throw new FacilitatorUnavailableError('Payment facilitator is unavailable')
      }
      const state = await refresh(client)
      if (state.liveRails.length === 0) {
        throw new FacilitatorUnavailableError('The facilitator supports none of our rails')
      }
      return state
    },
    observe(error) {
      if (error === undefined) {
        lastError = undefined
        return
      }
      lastError = describeError(error)
    },
    status() {
      const liveNetworks = new Set(live?.liveRails.map((r) => r.network))
      return {
        state: !client ? 'unconfigured' : live && !lastError ? 'ok' : 'unavailable',
        ...(options.url ? { url: options.url } : {}),
        ...(lastOkAt !== undefined ? { lastOkAt } : {}),
        ...(lastError ? { lastError } : {}),
        rails: options.rails.map((r) => ({
          id: r.id,
          network: r.network,
          live: liveNetworks.has(r.network),
        })),
      }
    },
  }
}
