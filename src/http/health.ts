import type { Hono } from 'hono'
import type { Health } from '../descriptions/discovery/health-schema.js'
import { DEVNET_WORDS } from '../descriptions/words.js'
import type { FacilitatorLink } from '../facilitators/link.js'
import type { FacilitatorReport } from '../facilitators/types.js'
import type { RedisState } from '../redis.js'

/** What the prepaid channels report about themselves, without I/O (`Channels.status()`). */
export interface ChannelsHealthLike {
  offered: boolean
  reason?: string
  storage: 'redis' | 'file'
  manager: {
    role: 'holder' | 'standby'
    channels: number
    unclaimed: string
    oldestUnclaimedSeconds: number
    lastClaimAt?: number
    lastError?: string
  }
}

/**
 * How long the oldest unclaimed voucher may wait, in claim intervals, before the channels are
 * reported degraded (claims fail or fall behind).
 */
export const CLAIM_LAG_INTERVALS = 3

/** What telemetry reports about itself, without I/O (`Telemetry.health()`). */
export interface TelemetryHealthLike {
  status: 'ok' | 'degraded'
}

export interface HealthOptions {
  link: FacilitatorLink
  /** Telemetry's own last-known state; absent when the app runs without telemetry. */
  telemetryHealth?: (() => TelemetryHealthLike) | undefined
  /** The shared Redis connection's last-known state; absent without REDIS_URL. */
  redisHealth?: (() => RedisState) | undefined
  /** The rails are simulated on a local devnet (X402_DEVNET): the report says so first. */
  devnet?: boolean
  /** The prepaid channels and their claim interval in seconds; absent when not configured. */
  channels?: { status(): ChannelsHealthLike; claimIntervalSeconds: number } | undefined
}

/** Why one facilitator makes the report degraded, naming its host and auth mode; or nothing. */
function facilitatorReason(f: FacilitatorReport): string | undefined {
  const name = `facilitator ${f.host} (auth ${f.auth})`
  const { calls, failures, timeouts, windowSeconds } = f.recent
  const recent = `${failures} of its ${calls} calls in the last ${windowSeconds / 60} min failed (${timeouts} timed out)`
  switch (f.state) {
    case 'unauthorized':
      return `${name} refused our credentials (${f.lastError ?? 'HTTP 401'}): ${
        f.auth === 'none'
          ? 'it wants credentials, set its FACILITATOR_AUTH'
          : `check ${f.auth.toUpperCase()}_API_KEY_ID and ${f.auth.toUpperCase()}_API_KEY_SECRET`
      }`
    case 'down':
      return `${name} is down (${f.lastError ?? 'failing'}): its rails go to the next facilitator that offers them; ${recent}`
    case 'degraded':
      return `${name} is failing: ${recent}`
    case 'unknown':
      return `${name} has not answered yet`
    default:
      return undefined
  }
}

/**
 * Computes the health report from last-known states, without waiting on any I/O.
 *
 * Degraded when the facilitators are unconfigured or all failing, when a facilitator is down,
 * refuses our credentials or failed recently (each named by host and auth mode), when a
 * configured rail is not live (no facilitator offers it, so it is left out of every 402), when
 * telemetry is degraded, or when the shared Redis is down (paid calls then answer 503
 * `guard_unavailable`).
 *
 * @example
 * checkHealth({ link }) // { status: 'ok', reasons: [], checks: { facilitator: { status: 'ok', … }, … } }
 */
export function checkHealth(options: HealthOptions): Health {
  const facilitator = options.link.status()
  const reasons: string[] = []
  if (facilitator.state === 'unconfigured') {
    reasons.push('no payment facilitator is configured: paid calls answer 503')
  } else if (facilitator.state === 'unavailable') {
    reasons.push('the payment facilitator is unreachable or failing: paid calls answer 503')
  }
  for (const f of facilitator.facilitators) {
    const reason = facilitatorReason(f)
    if (reason) reasons.push(reason)
  }
  const down = facilitator.rails.filter((r) => !r.live)
  if (facilitator.rails.length === 0) reasons.push('no payment rail is configured')
  for (const rail of down) {
    reasons.push(
      facilitator.facilitators.length > 0 && facilitator.state !== 'unavailable'
        ? `rail ${rail.network} is not live: no facilitator offers it`
        : `rail ${rail.network} is not live`,
    )
  }
  const telemetry = options.telemetryHealth?.() ?? { status: 'not_configured' as const }
  if (telemetry.status === 'degraded') reasons.push('telemetry storage is degraded')
  const redis = options.redisHealth?.()
  if (redis?.status === 'down') {
    reasons.push('the shared Redis is unreachable: paid calls answer 503 guard_unavailable')
  }

  const channels = channelsCheck(options.channels)
  if (channels.status === 'degraded' && channels.reason) reasons.push(channels.reason)

  return {
    status: reasons.length === 0 ? 'ok' : 'degraded',
    ...(options.devnet ? { devnet: `The payment networks are ${DEVNET_WORDS}.` } : {}),
    reasons,
    checks: {
      facilitator: {
        status: facilitator.state,
        ...(facilitator.lastOkAt === undefined
          ? {}
          : { last_ok_at: new Date(facilitator.lastOkAt).toISOString() }),
        facilitators: facilitator.facilitators.map((f) => ({
          host: f.host,
          auth: f.auth,
          status: f.state,
          networks: f.networks,
          ...(f.lastOkAt === undefined ? {} : { last_ok_at: new Date(f.lastOkAt).toISOString() }),
          ...(f.lastError === undefined ? {} : { reason: f.lastError }),
          recent: {
            window_s: f.recent.windowSeconds,
            calls: f.recent.calls,
            failures: f.recent.failures,
            timeouts: f.recent.timeouts,
          },
        })),
      },
      rails: {
        status: down.length === 0 && facilitator.rails.length > 0 ? 'ok' : 'degraded',
        networks: facilitator.rails.map(({ id, network, live, facilitator: host }) => ({
          id,
          network,
          live,
          ...(host ? { facilitator: host } : {}),
        })),
      },
      telemetry: { ...telemetry },
      redis: redis
        ? {
            status: redis.status === 'ready' ? 'ok' : 'unavailable',
            ...(redis.lastReadyAt === undefined
              ? {}
              : { last_ok_at: new Date(redis.lastReadyAt).toISOString() }),
            ...(redis.status === 'down' && redis.lastError ? { reason: redis.lastError } : {}),
          }
        : { status: 'not_configured' },
      channels,
    },
  }
}

/**
 * Registers GET (and so HEAD) `/health`: 200 with {@link Health}, `Cache-Control: no-store`.
 *
 * The report names each facilitator by its URL's host and auth mode only: never its path, a
 * credential or its error text (a short reason such as `ECONNREFUSED` or `HTTP 503`). When the
 * facilitators are not all `ok`, the probe also lets the link re-read the `/supported` of those
 * due (the link and the router rate-limit that), so that health recovers without waiting for a
 * paid call.
 *
 * @example
 * registerHealth(app, { link: gate.link, telemetryHealth: () => telemetry.health() })
 */
export function registerHealth(app: Hono, options: HealthOptions): void {
  app.get('/health', (c) => {
    const health = checkHealth(options)
    const status = health.checks.facilitator.status
    if (status === 'unavailable' || status === 'degraded') {
      options.link.ready().catch(() => {})
    }
    c.header('Cache-Control', 'no-store')
    return c.json(health, 200)
  })
}

/**
 * The channels' check: `not_offered` with its reason (not a fault of the service: exact is still
 * offered); `degraded` when this instance holds the manager and its oldest unclaimed voucher has
 * waited {@link CLAIM_LAG_INTERVALS} claim intervals, or its last job failed.
 */
function channelsCheck(channels: HealthOptions['channels']): Health['checks']['channels'] {
  if (!channels) return { status: 'not_configured' }
  const { offered, reason, storage, manager } = channels.status()
  const lagging =
    manager.role === 'holder' &&
    manager.oldestUnclaimedSeconds > CLAIM_LAG_INTERVALS * channels.claimIntervalSeconds
  const status = !offered ? 'not_offered' : lagging || manager.lastError ? 'degraded' : 'ok'
  return {
    status,
    ...(status === 'not_offered' && reason ? { reason } : {}),
    ...(status === 'degraded'
      ? {
          reason: lagging
            ? `channel claims fall behind: the oldest unclaimed voucher is ${manager.oldestUnclaimedSeconds} s old`
            : `channel manager: ${manager.lastError}`,
        }
      : {}),
    storage,
    manager: manager.role,
    channels: manager.channels,
    unclaimed_atomic: manager.unclaimed,
    oldest_unclaimed_s: manager.oldestUnclaimedSeconds,
    ...(manager.lastClaimAt === undefined
      ? {}
      : { last_claim_at: new Date(manager.lastClaimAt).toISOString() }),
  }
}
