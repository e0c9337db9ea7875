import type { Hono } from 'hono'
import { z } from 'zod'
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
          .enum(['ok', 'unavailable', 'unconfigured'])
          .describe(
            '`unconfigured`: no facilitator URL, every paid call answers 503 (fail-closed).',
          ),
        last_ok_at: z
          .string()
          .optional()
          .describe('ISO 8601 time of the last successful `/supported` of the facilitator.'),
      }),
      rails: z.object({
        status: z.enum(['ok', 'degraded']),
        networks: z
          .array(
            z.object({
              id: z.enum(['evm', 'solana']),
              network: z.string().describe('CAIP-2 network identifier.'),
              live: z.boolean().describe('The facilitator settles this rail right now.'),
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

/**
 * Computes the health report from last-known states, without waiting on any I/O.
 *
 * Degraded when the facilitator is unconfigured or failing, when a configured rail is not live
 * (the facilitator does not support it, so it is left out of every 402), when telemetry is
 * degraded, or when the shared Redis is down (paid calls then answer 503 `guard_unavailable`).
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
  const down = facilitator.rails.filter((r) => !r.live)
  if (facilitator.rails.length === 0) reasons.push('no payment rail is configured')
  for (const rail of down) reasons.push(`rail ${rail.network} is not live`)
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
      },
      rails: {
        status: down.length === 0 && facilitator.rails.length > 0 ? 'ok' : 'degraded',
        networks: facilitator.rails.map(({ id, network, live }) => ({ id, network, live })),
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
 * The report never includes the facilitator URL or its error text (they may name internal hosts).
 * When the facilitator link is not `ok`, the probe also starts a background reload of its
 * `/supported` (the link rate-limits reloads), so that health recovers without waiting for a paid
 * call.
 *
 * @example
 * registerHealth(app, { link: gate.link, telemetryHealth: () => telemetry.health() })
 */
export function registerHealth(app: Hono, options: HealthOptions): void {
  app.get('/health', (c) => {
    const health = checkHealth(options)
    if (health.checks.facilitator.status === 'unavailable') {
      options.link.ready().catch(() => {})
    }
    c.header('Cache-Control', 'no-store')
    return c.json(health, 200)
  })
}
