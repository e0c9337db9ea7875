import type { FacilitatorClient } from '@x402/core/server'
import {
  FacilitatorTimeoutError,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  type SupportedKind,
  type SupportedResponse,
  type VerifyResponse,
} from '@x402/core/types'
import { logger } from '../logger.js'
import { failureKind, marksDown, neverReached, shortReason } from './failures.js'
import type { FacilitatorAuthMode, FacilitatorReport, FacilitatorRoutes } from './types.js'

/**
 * Whether a failed call still shows the facilitator working: its verdict on the payment, or its
 * refusal of a request it read (a 4xx about the request). Neither is sent to another facilitator.
 */
const answered = (error: unknown) => {
  const kind = failureKind(error)
  return kind === 'verdict' || kind === 'rejected'
}

import { createRecentOutcomes, type RecentOutcomes } from './recent.js'

/** How often a facilitator that answers has its `/supported` re-read, in milliseconds. */
export const SUPPORTED_REFRESH_MS = 5 * 60_000
/** First wait before a down facilitator is asked again, in ms; doubled per failure in a row. */
export const RETRY_MIN_MS = 2_000
/** Longest wait before a down facilitator is asked again, in milliseconds. */
export const RETRY_MAX_MS = 60_000

/** One facilitator the router may use. */
export interface RoutedFacilitator {
  /** Host (and port) of its URL: what logs and `/health` name, never its path or credentials. */
  host: string
  auth: FacilitatorAuthMode
  client: FacilitatorClient
}

/** Options of {@link createFacilitatorRouter}. */
export interface FacilitatorRouterOptions {
  /** The facilitators in order of preference (FACILITATOR_URL). */
  facilitators: RoutedFacilitator[]
  /**
   * FACILITATOR_TIMEOUT_MS, in milliseconds: each client bounds its own requests by it; a settle's
   * attempts on several facilitators share it (see {@link FacilitatorRouter}).
   */
  timeoutMs: number
  /**
   * FACILITATOR_SETTLE_TIMEOUT_MS, in milliseconds: one settlement of a PaymentPayload, all its
   * attempts included (failover, the SDK's one `settlement_pending` retry); default `timeoutMs`.
   */
  settleTimeoutMs?: number
  now?: () => number
}

/**
 * One `FacilitatorClient` over several facilitators, given to the one `x402ResourceServer`, so
 * that the payment gate's `verifyPayment`/`settlePayment` route without knowing it:
 *
 * - `/supported`: each facilitator's own, merged: every (version, network, scheme) comes from the
 *   first facilitator, in order of preference, that is up and offers it. A facilitator's
 *   `/supported` is re-read every {@link SUPPORTED_REFRESH_MS}; a down one is retried after
 *   2 s, 4 s, … up to {@link RETRY_MAX_MS}, in the background while another one serves.
 * - verify: the facilitators that offer the payment's network and scheme (and, when its
 *   requirements name a `feePayer`, as Solana's do, whose `/supported` names that fee payer: only
 *   it can co-sign the transaction), those up first, in order; on a failure of the facilitator
 *   (refused, 5xx, 401/403, 408, 429, timeout, malformed answer), the next one. Its verdict on the
 *   payment, or a 4xx refusing the request, is thrown as it is. Each attempt
 *   is bounded by FACILITATOR_TIMEOUT_MS, so verify takes at most that many times the facilitators.
 * - settle: the same order (the facilitator that verified this payment first), but the next
 *   facilitator is tried only when the previous one certainly never received the request
 *   ({@link neverReached}: refused, DNS…). After a timeout or an HTTP answer of any kind the
 *   error is thrown: the payment may be settling there, and sending it elsewhere could settle it
 *   twice. All attempts share one FACILITATOR_SETTLE_TIMEOUT_MS, counted from the first: a
 *   settle of the same PaymentPayload object again (the SDK's one retry on `settlement_pending`)
 *   goes only to the facilitator that had it, within what is left of it, so that a settlement
 *   never outlasts the budget the payment's validity was checked against (src/payment/budget.ts).
 *   With none left, it is not sent: the outcome stays unknown, for the chain to judge.
 * - A failure that says the facilitator is down (`marksDown`: no connection, a timeout, refused
 *   credentials, a dropped connection, 429/502/503/504, or any failed `/supported`) marks it down:
 *   the next calls skip it, and the revision changes so that the link rebuilds its offers. Any
 *   other failure (a 500 on one payment) is recorded, not more. A successful call marks it up.
 *
 * @example
 * const router = createFacilitatorRouter({ facilitators: [{ host: 'a.example', auth: 'cdp', client }], timeoutMs: 10_000 })
 * const server = new x402ResourceServer(router)
 */
export type FacilitatorRouter = FacilitatorClient & FacilitatorRoutes

interface Entry extends RoutedFacilitator {
  supported?: SupportedResponse
  supportedAt?: number
  /** undefined: not asked yet. */
  up?: boolean
  unauthorized: boolean
  lastOkAt?: number
  lastError?: string
  failuresInARow: number
  retryAt: number
  recent: RecentOutcomes
  probing?: Promise<void>
}

const HINTS: Record<FacilitatorAuthMode, string> = {
  none: 'it wants credentials: set its FACILITATOR_AUTH',
  cdp: 'check CDP_API_KEY_ID and CDP_API_KEY_SECRET',
  payai: 'check PAYAI_API_KEY_ID and PAYAI_API_KEY_SECRET',
}

function offers(
  kind: SupportedKind,
  version: number,
  requirements: PaymentRequirements,
  feePayer: string | undefined,
): boolean {
  return (
    kind.x402Version === version &&
    kind.network === requirements.network &&
    kind.scheme === requirements.scheme &&
    (feePayer === undefined || kind.extra?.feePayer === feePayer)
  )
}

/**
 * Creates the router; see {@link FacilitatorRouter}. Waits on no I/O.
 *
 * @example
 * const router = createFacilitatorRouter({ facilitators, timeoutMs: 10_000 })
 * await router.getSupported() // the merged kinds
 */
export function createFacilitatorRouter(options: FacilitatorRouterOptions): FacilitatorRouter {
  const now = options.now ?? Date.now
  const entries: Entry[] = options.facilitators.map((f) => ({
    ...f,
    unauthorized: false,
    failuresInARow: 0,
    retryAt: 0,
    recent: createRecentOutcomes({ now }),
  }))
  let revision = 0
  /** Which facilitator a PaymentPayload was verified by, and sent to settle to. */
  const verifiedBy = new WeakMap<object, Entry>()
  const settlingAt = new WeakMap<object, Entry>()
  /** When the first settle attempt of a PaymentPayload started, in epoch milliseconds. */
  const settleStarted = new WeakMap<object, number>()
  const settleTimeoutMs = options.settleTimeoutMs ?? options.timeoutMs

  const serving = (e: Entry) => e.up === true && e.supported !== undefined
  const who = (e: Entry) => ({ facilitator: e.host, auth: e.auth })

  function succeeded(e: Entry): void {
    const before = serving(e)
    e.recent.record('ok')
    e.lastOkAt = now()
    e.failuresInARow = 0
    e.unauthorized = false
    if (e.up === false) logger.info(who(e), 'facilitator is back')
    e.up = true
    if (serving(e) !== before) revision++
  }

  function failed(e: Entry, op: string, error: unknown): void {
    const before = serving(e)
    const kind = failureKind(error)
    const reason = shortReason(error)
    e.recent.record(kind === 'timeout' ? 'timeout' : 'failed')
    if (op !== 'supported' && !marksDown(error)) {
      // It answered, but failed on this one request: recorded (the facilitator shows degraded),
      // never taken out of service by a payment that could have provoked it.
      e.lastError = reason
      logger.warn({ ...who(e), op, reason }, 'facilitator failed one request; it stays in service')
      return
    }
    e.failuresInARow++
    e.retryAt = now() + Math.min(RETRY_MAX_MS, RETRY_MIN_MS * 2 ** (e.failuresInARow - 1))
    const news = e.up !== false || e.lastError !== reason
    e.lastError = reason
    e.unauthorized = kind === 'unauthorized'
    e.up = false
    if (kind === 'unauthorized') {
      if (news) {
        logger.error(
          { ...who(e), op, reason },
          `facilitator ${e.host} (auth ${e.auth}) refused our credentials: ${HINTS[e.auth]}`,
        )
      }
    } else if (news) {
      logger.warn(
        { ...who(e), op, reason },
        'facilitator is down: its rails go to the next facilitator that offers them',
      )
    }
    if (serving(e) !== before) revision++
  }

  function probe(e: Entry): Promise<void> {
    e.probing ??= e.client
      .getSupported()
      .then(
        (supported) => {
          const changed =
            JSON.stringify(supported.kinds) !== JSON.stringify(e.supported?.kinds ?? null)
          e.supported = supported
          e.supportedAt = now()
          if (changed && serving(e)) revision++
          succeeded(e)
        },
        (error: unknown) => failed(e, 'supported', error),
      )
      .finally(() => {
        e.probing = undefined
      })
    return e.probing
  }

  function due(e: Entry): boolean {
    if (e.probing) return false
    if (e.up === false || !e.supported) return now() >= e.retryAt
    return e.supportedAt === undefined || now() - e.supportedAt >= SUPPORTED_REFRESH_MS
  }

  function merged(): SupportedResponse {
    const kinds: SupportedKind[] = []
    const seen = new Set<string>()
    const extensions = new Set<string>()
    const signers: Record<string, string[]> = {}
    for (const e of entries) {
      if (!serving(e) || !e.supported) continue
      for (const kind of e.supported.kinds) {
        const key = `${kind.x402Version} ${kind.network} ${kind.scheme}`
        if (seen.has(key)) continue
        seen.add(key)
        kinds.push(kind)
      }
      for (const extension of e.supported.extensions ?? []) extensions.add(extension)
      for (const [family, list] of Object.entries(e.supported.signers ?? {})) {
        signers[family] = [...new Set([...(signers[family] ?? []), ...list])]
      }
    }
    return { kinds, extensions: [...extensions], signers }
  }

  /** The facilitators that can take this payment: up ones first, each group in preference order. */
  function candidates(payload: PaymentPayload, requirements: PaymentRequirements): Entry[] {
    const feePayer =
      typeof requirements.extra?.feePayer === 'string' ? requirements.extra.feePayer : undefined
    const able = entries.filter((e) =>
      e.supported?.kinds.some((k) => offers(k, payload.x402Version, requirements, feePayer)),
    )
    return [...able.filter((e) => e.up !== false), ...able.filter((e) => e.up === false)]
  }

  function noneOffers(requirements: PaymentRequirements): Error {
    return new Error(
      `No facilitator offers ${requirements.scheme} on ${requirements.network}${
        typeof requirements.extra?.feePayer === 'string' ? ' with this fee payer' : ''
      }`,
    )
  }

  /** A later settle attempt gets what is left of the settle's one timeout. */
  function within<T>(ms: number, attempt: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new FacilitatorTimeoutError('settle', settleTimeoutMs)),
        Math.max(0, ms),
      )
    })
    return Promise.race([attempt, deadline]).finally(() => clearTimeout(timer))
  }

  return {
    async getSupported() {
      const dueNow = entries.filter(due)
      const anyServing = entries.some(serving)
      // A call never waits on a facilitator known to be down while another one serves: its
      // retry runs in the background, and its coming back changes the revision.
      for (const e of dueNow) {
        if (e.up === false && anyServing) void probe(e)
      }
      await Promise.all(dueNow.filter((e) => e.up !== false || !anyServing).map(probe))
      const response = merged()
      if (response.kinds.length === 0) {
        throw new Error(
          `No facilitator answered /supported: ${entries
            .map((e) => `${e.host} (auth ${e.auth}) ${e.lastError ?? 'lists no payment kind'}`)
            .join('; ')}`,
        )
      }
      return response
    },

    async verify(payload, requirements): Promise<VerifyResponse> {
      const able = candidates(payload, requirements)
      // Built only when needed: an Error captures a stack trace.
      let lastError: unknown
      for (const [i, e] of able.entries()) {
        try {
          const response = await e.client.verify(payload, requirements)
          succeeded(e)
          verifiedBy.set(payload, e)
          return response
        } catch (error) {
          if (answered(error)) {
            succeeded(e)
            throw error
          }
          failed(e, 'verify', error)
          lastError = error
          const next = able[i + 1]
          if (next) {
            logger.warn(
              { ...who(e), reason: shortReason(error), next: next.host },
              'facilitator verify failed: trying the next facilitator',
            )
          }
        }
      }
      throw lastError ?? noneOffers(requirements)
    },

    async settle(payload, requirements): Promise<SettleResponse> {
      const pinned = settlingAt.get(payload)
      let able: Entry[]
      if (pinned) {
        able = [pinned]
      } else {
        able = candidates(payload, requirements)
        const verifier = verifiedBy.get(payload)
        if (verifier?.up && able.includes(verifier)) {
          able = [verifier, ...able.filter((e) => e !== verifier)]
        }
      }
      const started = settleStarted.get(payload) ?? now()
      settleStarted.set(payload, started)
      let lastError: unknown
      for (const [i, e] of able.entries()) {
        const left = started + settleTimeoutMs - now()
        if (left <= 0) {
          // A retry with no time left: what was sent before may have landed; not sent again.
          lastError ??= new FacilitatorTimeoutError('settle', settleTimeoutMs)
          break
        }
        // Recorded before sending: whatever happens next, this payment may be there.
        settlingAt.set(payload, e)
        try {
          const attempt = e.client.settle(payload, requirements)
          const response = await (left >= settleTimeoutMs ? attempt : within(left, attempt))
          succeeded(e)
          return response
        } catch (error) {
          if (answered(error)) {
            succeeded(e)
            throw error
          }
          failed(e, 'settle', error)
          lastError = error
          if (pinned && neverReached(error)) {
            // An earlier attempt of this payload was sent: the payment may have moved, so this
            // is a settlement in doubt, never "never reached" (which would free the payment).
            throw new Error(
              `Facilitator settle retry not delivered (${shortReason(error)}); an earlier attempt was sent`,
            )
          }
          if (pinned || !neverReached(error)) throw error
          const next = able[i + 1]
          if (next) {
            logger.warn(
              { ...who(e), reason: shortReason(error), next: next.host },
              'facilitator never received the settle: sending it to the next facilitator',
            )
          }
        }
      }
      throw lastError ?? noneOffers(requirements)
    },

    reports(): FacilitatorReport[] {
      return entries.map((e) => {
        const recent = e.recent.counts()
        const state: FacilitatorReport['state'] =
          e.up === undefined
            ? 'unknown'
            : e.unauthorized
              ? 'unauthorized'
              : e.up === false
                ? 'down'
                : recent.failures > 0
                  ? 'degraded'
                  : 'ok'
        return {
          host: e.host,
          auth: e.auth,
          state,
          networks: [...new Set(e.supported?.kinds.map((k) => k.network) ?? [])].sort(),
          ...(e.lastOkAt === undefined ? {} : { lastOkAt: e.lastOkAt }),
          ...(e.lastError === undefined || state === 'ok' ? {} : { lastError: e.lastError }),
          recent,
        }
      })
    },

    revision: () => revision,

    probeDue: () => entries.some(due),

    servedBy(network) {
      return entries.find(
        (e) =>
          serving(e) &&
          e.supported?.kinds.some(
            (k) => k.x402Version === 2 && k.network === network && k.scheme === 'exact',
          ),
      )?.host
    },
  }
}
