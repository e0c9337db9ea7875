import type { Hono } from 'hono'
import { z } from 'zod'
import type { FacilitatorReport } from '../facilitators/types.js'
import type { FacilitatorLink } from '../payment/facilitator.js'
import type { RedisState } from '../redis.js'

/** What telemetry reports about itself, without I/O (`Telemetry.health()`). */
export interface TelemetryHealthLike {
  status: 'ok' | 'degraded'
}

/** Body of GET /health. */
export const healthSchema = z
  .object({
    status: z
      .enum(['ok', 'degraded'])
      .describe('`degraded` still answers 200: the process serves, but see `reasons`.'),
    reasons: z.array(z.string()).describe('Why the status is `degraded`; empty when `ok`.'),
    checks: z.object({
      facilitator: z.object({
        status: z
          .enum(['ok', 'degraded', 'unavailable', 'unconfigured'])
          .describe(
            '`unconfigured`: no facilitator URL, every paid call answers 503 (fail-closed). `unavailable`: no facilitator serves, paid calls answer 503. `degraded`: paid calls are served, but a facilitator is down, refuses our credentials, or failed recently.',
          ),
        last_ok_at: z
          .string()
          .optional()
          .describe('ISO 8601 time of the last successful `/supported` load.'),
        facilitators: z
          .array(
            z.object({
              host: z.string().describe("Host of the facilitator's URL (never its path or a key)."),
              auth: z.enum(['none', 'cdp', 'payai']).describe('Its FACILITATOR_AUTH mode.'),
              status: z
                .enum(['ok', 'degraded', 'down', 'unauthorized', 'unknown'])
                .describe(
                  '`down`: its last call failed, calls go to the next facilitator offering the rail until it answers again. `unauthorized`: it answered 401 or 403. `degraded`: it answers, but some of its recent calls failed or timed out. `unknown`: not asked yet.',
                ),
              networks: z.array(z.string()).describe('CAIP-2 networks its `/supported` lists.'),
              last_ok_at: z
                .string()
                .optional()
                .describe('ISO 8601 time of its last successful call.'),
              reason: z
                .string()
                .optional()
                .describe(
                  'Short reason of its last failure (`ECONNREFUSED`, `timeout`, `HTTP 503`).',
                ),
              recent: z
                .object({
                  window_s: z.number().int(),
                  calls: z.number().int(),
                  failures: z.number().int().describe('Calls that failed, timeouts included.'),
                  timeouts: z.number().int(),
                })
                .describe(
                  'Its verify, settle and `/supported` calls in the last `window_s` seconds.',
                ),
            }),
          )
          .describe('Each configured facilitator, in order of preference (FACILITATOR_URL).'),
      }),
      rails: z.object({
        status: z.enum(['ok', 'degraded']),
        networks: z
          .array(
            z.object({
              id: z.enum(['evm', 'solana']),
              network: z.string().describe('CAIP-2 network identifier.'),
              live: z.boolean().describe('A facilitator settles this rail right now.'),
              facilitator: z
                .string()
                .optional()
                .describe('Host of the facilitator that serves this rail now.'),
            }),
          )
          .describe('Configured rails in advertising order.'),
      }),
      telemetry: z
        .object({ status: z.enum(['ok', 'degraded', 'not_configured']) })
        .catchall(z.unknown())
        .describe('Telemetry store state (backend, buffered and dropped event counts).'),
      redis: z
        .object({
          status: z
            .enum(['ok', 'unavailable', 'not_configured'])
            .describe(
              '`unavailable`: paid calls answer 503 guard_unavailable (fail-closed); free endpoints serve. `not_configured`: no REDIS_URL, in-process guard (one instance only).',
            ),
          last_ok_at: z
            .string()
            .optional()
            .describe('ISO 8601 time the connection last became ready.'),
          reason: z
            .string()
            .optional()
            .describe('Short reason of the last connection failure (an error code).'),
        })
        .describe('The shared Redis of the duplicate-settlement guard and idempotent replays.'),
    }),
  })
  .describe('Health for load balancers: always 200 while the process serves.')

/** Body of GET /health. */
export type Health = z.infer<typeof healthSchema>

/** Options of {@link registerHealth}. */
export interface HealthOptions {
  link: FacilitatorLink
  /** Telemetry's own last-known state; absent when the app runs without telemetry. */
  telemetryHealth?: (() => TelemetryHealthLike) | undefined
  /** The shared Redis connection's last-known state; absent without REDIS_URL. */
  redisHealth?: (() => RedisState) | undefined
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

  return {
    status: reasons.length === 0 ? 'ok' : 'degraded',
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
