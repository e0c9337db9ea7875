import { type FacilitatorClient, x402ResourceServer } from '@x402/core/server'
import type {
  PaymentRequirements,
  ResourceServerExtension,
  SchemeNetworkServer,
} from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/server'
import { ExactSvmScheme } from '@x402/svm/exact/server'
import { describeError, logger } from '../logger.js'
import { FacilitatorUnavailableError } from './errors.js'
import { shortReason } from './failures.js'
import type { FacilitatorReport, FacilitatorRoutes } from './types.js'

/**
 * A payment rail as the link offers it (the service's `Rail`): its family, CAIP-2 network, USDC
 * asset, our payTo on it, and the `extra` we add (the EIP-712 domain of USDC on EVM).
 */
export interface Rail {
  id: 'evm' | 'solana'
  network: `${string}:${string}`
  asset: string
  payTo: string
  extra: Record<string, unknown>
}

/**
 * A second way to pay on a rail, offered beside its `exact` in every 402 when the facilitator
 * supports it: the `batch-settlement` channels of src/channels/ on Base.
 */
export interface ExtraScheme {
  /** The rail it is offered on. */
  rail: Rail['id']
  /** The SDK's server scheme, registered on every resource server the link builds. */
  scheme: SchemeNetworkServer
  /** Its own fields of the requirements' `extra` (e.g. `minDeposit`, atomic units). */
  extra: Record<string, unknown>
  /** Whether it may be offered now (e.g. its escrow check passed); read at every offer. */
  offered(): boolean
}

/**
 * Seconds a client has to complete a payment (PaymentRequirements.maxTimeoutSeconds): an EIP-3009
 * authorization's `validBefore` and a Solana transaction's lifetime follow it, so a paid call must
 * settle within it.
 */
export const MAX_TIMEOUT_SECONDS = 120

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
  /**
   * PaymentRequirements per atomic price: per live rail in rail order, its `exact` entry, then
   * its extra schemes the facilitator supports and that are offered now.
   */
  accepts(atomicPrice: string): Promise<PaymentRequirements[]>
}

/** Health of the link, for `/health`. */
export interface FacilitatorStatus {
  /**
   * `unconfigured`: no facilitator; `unavailable`: no `/supported` could be loaded, or the last
   * verify or settle found every facilitator failing (paid calls answer 503); `degraded`: calls
   * are served, but a facilitator is down, unauthorized or failing recently; `ok`.
   */
  state: 'unconfigured' | 'ok' | 'degraded' | 'unavailable'
  /** Epoch ms of the last successful `/supported` load. */
  lastOkAt?: number
  lastError?: string
  /** Configured rails; `facilitator` is the host serving a live rail (with several facilitators). */
  rails: { id: Rail['id']; network: string; live: boolean; facilitator?: string }[]
  /** Each facilitator, in order of preference; empty for a plain client or none. */
  facilitators: FacilitatorReport[]
}

/**
 * The service's link to its x402 facilitators: the client used for `/supported`, verify and
 * settle (a router over several facilitators, src/facilitators/, in production) and the resource
 * server built on its `/supported`.
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
  /**
   * The facilitators: the router of src/facilitators/ (several facilitators, their auth,
   * failover and reports), or any `FacilitatorClient` (tests). Undefined: unconfigured, every paid
   * call fails closed.
   */
  client?: (FacilitatorClient & Partial<FacilitatorRoutes>) | undefined
  /** Configured rails in advertising order. */
  rails: Rail[]
  /** Extra schemes offered beside `exact` (src/channels/), if any. */
  schemes?: readonly ExtraScheme[]
  /** Seconds a client has to complete payment (PaymentRequirements.maxTimeoutSeconds). */
  maxTimeoutSeconds?: number
  /**
   * Extensions registered on every resource server the link builds (the receipts' `offer-receipt`);
   * a PaymentRequired declaring one of them is enriched by it.
   */
  extensions?: readonly ResourceServerExtension[]
  now?: () => number
  /** @deprecated Ignored: the client carries its URLs (kept so that older callers compile). */
  url?: string | undefined
  /** @deprecated Ignored: the client carries its timeout (kept so that older callers compile). */
  timeoutMs?: number
}

/**
 * Creates the facilitator link.
 *
 * @example
 * const link = createFacilitatorLink({ client: createFacilitators(config), rails })
 * const { accepts } = await link.ready()
 */
export function createFacilitatorLink(options: FacilitatorLinkOptions): FacilitatorLink {
  const now = options.now ?? Date.now
  const maxTimeoutSeconds = options.maxTimeoutSeconds ?? MAX_TIMEOUT_SECONDS
  const client = options.client
  /** The router's revision the live state was built from (-1: a plain client has none). */
  const revisionOf = () => client?.revision?.() ?? -1

  let live: LiveState | undefined
  let liveRevision = -1
  let lastOkAt: number | undefined
  let lastFailAt: number | undefined
  let lastError: string | undefined
  let inFlight: Promise<LiveState> | undefined

  async function load(c: FacilitatorClient): Promise<LiveState> {
    const revision = revisionOf()
    // A fresh server per refresh: x402ResourceServer.initialize() clears its maps before it
    // refetches, which would make concurrent requests see "unsupported" mid-refresh.
    const server = new x402ResourceServer(c)
    for (const rail of options.rails) {
      server.register(rail.network, rail.id === 'evm' ? new ExactEvmScheme() : new ExactSvmScheme())
    }
    const extras = (options.schemes ?? []).flatMap((extra) => {
      const rail = options.rails.find((r) => r.id === extra.rail)
      return rail ? [{ ...extra, rail }] : []
    })
    for (const extra of extras) server.register(extra.rail.network, extra.scheme)
    for (const extension of options.extensions ?? []) server.registerExtension(extension)
    await server.initialize()
    const liveRails = options.rails.filter((rail) => {
      const kind = server.getSupportedKind(2, rail.network, 'exact')
      return (
        kind !== undefined && (rail.id !== 'solana' || typeof kind.extra?.feePayer === 'string')
      )
    })
    const liveExtras = extras.filter(
      (extra) =>
        liveRails.includes(extra.rail) &&
        server.getSupportedKind(2, extra.rail.network, extra.scheme.scheme) !== undefined,
    )
    const cache = new Map<string, Promise<PaymentRequirements[]>>()
    liveRevision = revision
    const build = async (rail: Rail, scheme: string, price: string, extra = {}) => {
      const [req] = await server.buildPaymentRequirements({
        scheme,
        network: rail.network,
        payTo: rail.payTo,
        // Atomic units, never a dollar string: the SDK reads a bare string as dollars.
        price: { amount: price, asset: rail.asset, extra: { ...rail.extra, ...extra } },
        maxTimeoutSeconds,
      })
      if (!req) throw new Error(`no ${scheme} requirements built for ${rail.network}`)
      return req
    }
    return {
      server,
      liveRails,
      accepts(atomicPrice) {
        const offered = liveExtras.filter((extra) => extra.offered())
        const key = `${atomicPrice} ${offered.map((extra) => extra.scheme.scheme).join(',')}`
        let built = cache.get(key)
        if (!built) {
          built = Promise.all(
            liveRails.flatMap((rail) => [
              build(rail, 'exact', atomicPrice),
              ...offered
                .filter((extra) => extra.rail === rail)
                .map((extra) =>
                  // An extra scheme that cannot be offered leaves `exact` offered alone.
                  build(rail, extra.scheme.scheme, atomicPrice, extra.extra).catch((error) => {
                    logger.warn(
                      { scheme: extra.scheme.scheme, err: describeError(error) },
                      'extra scheme not offered',
                    )
                    return undefined
                  }),
                ),
            ]),
          ).then((reqs) => reqs.filter((req): req is PaymentRequirements => req !== undefined))
          built.catch(() => cache.delete(key))
          cache.set(key, built)
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
          const missing = options.rails.filter((r) => !state.liveRails.includes(r))
          if (missing.length > 0) {
            logger.warn(
              { rails: missing.map((r) => r.network) },
              'no configured facilitator offers these rails (x402 v2, exact): they are left out of every 402',
            )
          }
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
      const retryWait = lastFailAt !== undefined && now() - lastFailAt < SUPPORTED_RETRY_MS
      if (live && revisionOf() !== liveRevision && !retryWait) {
        // Which facilitator serves a rail changed (one went down or came back): the offers name
        // it (a Solana offer carries its fee payer), so they are rebuilt before this call uses
        // them. The router answers from what it knows, without waiting on a facilitator that is
        // down.
        try {
          await refresh(client)
        } catch {
          // Served below from the last good state, or refused if it has no rail.
        }
      } else if (live) {
        if (
          (lastOkAt !== undefined && now() - lastOkAt > SUPPORTED_REFRESH_MS) ||
          client.probeDue?.()
        ) {
          // Stale but usable: refresh in the background, serve the last good state meanwhile.
          refresh(client).catch(() => {})
        }
      }
      if (live) {
        if (live.liveRails.length === 0) {
          throw new FacilitatorUnavailableError('The facilitator supports none of our rails')
        }
        return live
      }
      if (retryWait) {
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
      lastError = shortReason(error)
    },
    status() {
      const liveNetworks = new Set(live?.liveRails.map((r) => r.network))
      const facilitators = client?.reports?.() ?? []
      const state: FacilitatorStatus['state'] = !client
        ? 'unconfigured'
        : !live || lastError
          ? 'unavailable'
          : facilitators.some((f) => f.state !== 'ok')
            ? 'degraded'
            : 'ok'
      return {
        state,
        ...(lastOkAt !== undefined ? { lastOkAt } : {}),
        ...(lastError ? { lastError } : {}),
        rails: options.rails.map((r) => {
          const served = liveNetworks.has(r.network) ? client?.servedBy?.(r.network) : undefined
          return {
            id: r.id,
            network: r.network,
            live: liveNetworks.has(r.network),
            ...(served ? { facilitator: served } : {}),
          }
        }),
        facilitators,
      }
    },
  }
}
