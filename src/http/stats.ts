import type { Hono } from 'hono'
import { type Stats, TelemetryUnavailableError } from '../telemetry/index.js'
import { toHttpFailure } from './failures.js'

/** What `/stats` reads: the telemetry facade's `stats()`, or nothing when telemetry is off. */
export interface StatsDeps {
  /** Aggregates (cached for a couple of seconds by telemetry); rejects when storage is down. */
  stats?: () => Promise<Stats>
}

/**
 * Registers `GET /stats` (free, SPEC 2.3 and 4.2): aggregate paid-usage figures only, never a
 * payer key or transaction identifier. 503 `telemetry_unavailable` while storage is down.
 *
 * @example
 * registerStats(app, { stats: () => telemetry.stats() })
 */
export function registerStats(app: Hono, deps: StatsDeps): void {
  app.get('/stats', async (c) => {
    try {
      if (!deps.stats) throw new TelemetryUnavailableError('telemetry is not configured')
      const stats = await deps.stats()
      c.header('Cache-Control', 'no-cache')
      return c.json(stats)
    } catch (error) {
      const failure = toHttpFailure(error)
      return c.json(failure.body, failure.status, failure.headers)
    }
  })
}
