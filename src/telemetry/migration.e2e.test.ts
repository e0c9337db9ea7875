import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestSchema } from '../../test/helpers/pg-schema.js'
import { syntheticAttempts, syntheticPayerKey } from '../../test/helpers/telemetry-events.js'
import {
  createV1Postgres,
  createV1Sqlite,
  type V1Figures,
  v1Figures,
} from '../../test/helpers/telemetry-v1.js'
import { reconcile } from './reconcile.js'
import { openSnapshot } from './snapshot.js'
import { createTelemetryStore, type StoreLocation } from './store.js'
import { createTelemetry, type Telemetry } from './telemetry.js'
import type { EventRow, Stats } from './types.js'

// A store written by version-1 code (schema version 1, built with its frozen DDL and insert) is
// upgraded at start: the rollups are backfilled from the existing events in batches, and /stats
// answers the figures version 1 answered. Version 1's own aggregate queries over the raw events
// are the oracle, before and after the upgrade and after new events.

const HOUR = 3_600_000
/** 2025-06-15T12:30:00Z: half past, so every synthetic event falls in the same window whether
 * windows are exact to the millisecond (version 1) or to the hour (version 2). */
const NOW = Date.UTC(2025, 5, 15, 12, 30)

/** A version-1 store on one backend and how to reach it. */
interface V1Store {
  location: StoreLocation
  url: string
  cleanup(): Promise<void>
}

async function sqliteV1(rows: readonly EventRow[]): Promise<V1Store> {
  const dir = mkdtempSync(join(tmpdir(), 'telemetry-migration-'))
  const path = join(dir, 'telemetry.sqlite')
  createV1Sqlite(path, rows)
  return {
    location: { backend: 'sqlite', path },
    url: path,
    cleanup: async () => rmSync(dir, { recursive: true, force: true }),
  }
}

async function postgresV1(rows: readonly EventRow[]): Promise<V1Store> {
  const schema = await createTestSchema('migration')
  await createV1Postgres(schema.url, rows)
  return {
    location: { backend: 'postgres', url: schema.url },
    url: schema.url,
    cleanup: schema.drop,
  }
}

/** The figures of a /stats body, without the two fields that describe rather than count. */
function figures(stats: Stats): V1Figures {
  const { generated_at: _g, window: _w, ...rest } = stats
  return rest
}

async function withSnapshot<T>(
  location: StoreLocation,
  fn: (reader: Awaited<ReturnType<typeof openSnapshot>>) => Promise<T>,
): Promise<T> {
  const reader = await openSnapshot(location)
  try {
    return await fn(reader)
  } finally {
    await reader.close()
  }
}

describe.each([
  ['SQLite', sqliteV1],
  ['PostgreSQL', postgresV1],
] as const)('upgrading a version-1 store on %s', (_name, makeV1) => {
  let store: V1Store | undefined
  let telemetry: Telemetry | undefined
  afterEach(async () => {
    await telemetry?.close()
    await store?.cleanup()
    telemetry = undefined
    store = undefined
  })

  it('backfills the rollups in batches and answers the same figures before and after', async () => {
    // 10 days of history (some events older than the 7-day window), 40 payers.
    const rows = syntheticAttempts({ attempts: 400, now: NOW, maxHoursAgo: 240, payers: 40 })
    store = await makeV1(rows)
    const location = store.location
    const before = await withSnapshot(location, (r) => v1Figures(r, NOW))
    // The script exercises every figure.
    expect(before.paid_calls).toBe(400)
    expect(before.repeat_payers).toBeGreaterThan(5)
    expect(before.unique_payers).toBeGreaterThan(before.repeat_payers)
    expect(BigInt(before.revenue.last_24h.atomic)).toBeGreaterThan(0n)
    expect(BigInt(before.revenue.last_7d.atomic)).toBeLessThan(
      BigInt(before.revenue.lifetime.atomic),
    )

    // 800 events in batches of 7: 115 backfill steps, the last one partial.
    telemetry = await createTelemetry({
      store: createTelemetryStore(store.url, { backfillBatchSize: 7 }),
      salt: 'migration-test-salt',
      now: () => NOW,
      cacheMs: 0,
    })
    expect(telemetry.health().status).toBe('ok')
    expect(figures(await telemetry.stats())).toEqual(before)

    await withSnapshot(location, async (reader) => {
      const versions = await reader.all('SELECT version FROM telemetry_schema_version ORDER BY 1')
      expect(versions.map((v) => Number(v.version))).toEqual([1, 2, 3])
      const result = await reconcile(reader, NOW)
      for (const c of result.comparisons) expect(c.differences, c.name).toEqual([])
      expect(result.comparisons.map((c) => c.compared > 0)).toEqual([true, true, true, true, true])
    })

    // New events after the upgrade go through the rollups: a first settled call of a payer who
    // had one before (1 -> 2), and of a payer never seen (0 -> 1).
    const oncePayer = [...new Set(rows.map((r) => r.payerKey))].find(
      (key) =>
        key !== null &&
        rows.filter((r) => r.payerKey === key && r.outcome === 'settled').length === 1,
    )
    expect(oncePayer).toBeDefined()
    const fresh = syntheticPayerKey(10_000)
    const store2 = createTelemetryStore(store.url)
    try {
      const event = (payerKey: string | null, id: string): EventRow => ({
        id,
        at: NOW - HOUR,
        tool: 'hash',
        transport: 'http',
        network: 'eip155:8453',
        amount: '1000',
        outcome: 'settled',
        payerKey,
      })
      await store2.insert([
        event(oncePayer as string, '00000000-0000-4000-8000-000000000001'),
        event(fresh, '00000000-0000-4000-8000-000000000002'),
      ])
    } finally {
      await store2.close()
    }
    const later = await withSnapshot(location, (r) => v1Figures(r, NOW))
    expect(later.unique_payers).toBe(before.unique_payers + 1)
    expect(later.repeat_payers).toBe(before.repeat_payers + 1)
    expect(figures(await telemetry.stats())).toEqual(later)
  })

  it('upgrades an empty version-1 store', async () => {
    store = await makeV1([])
    telemetry = await createTelemetry({
      databaseUrl: store.url,
      salt: 'migration-test-salt',
      cacheMs: 0,
    })
    const stats = await telemetry.stats()
    expect(stats.paid_calls).toBe(0)
    expect(stats.revenue.lifetime).toEqual({ atomic: '0', usdc: '0' })
  })
})
