import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterEach, describe, expect, it } from 'vitest'
import { createTestSchema } from '../../test/helpers/pg-schema.js'
import { syntheticAttempts, syntheticPayerKey } from '../../test/helpers/telemetry-events.js'
import {
  createV1Postgres,
  createV1Sqlite,
  type V1Figures,
  v1Figures,
} from '../../test/helpers/telemetry-v1.js'
import { createV3Postgres, createV3Sqlite } from '../../test/helpers/telemetry-v3.js'
import { reconcile } from './reconcile.js'
import { openSnapshot } from './snapshot.js'
import { createTelemetryStore, type StoreLocation } from './store.js'
import { createTelemetry, type Telemetry } from './telemetry.js'
import type { EventRow, PaymentEvent, Stats } from './types.js'

// A store written by version-1 code (schema version 1, built with its frozen DDL and insert) is
// upgraded at start: the rollups are backfilled from the existing events in batches, and /stats
// answers the figures version 1 answered. Version 1's own aggregate queries over the raw events
// are the oracle, before and after the upgrade and after new events. A store written by version-3
// code (its rollups, some events pruned) is upgraded to version 4, which adds the scheme that paid:
// its rollups are carried over, not rebuilt, and voucher calls recorded after count as channels.

const HOUR = 3_600_000
/** 2025-06-15T12:30:00Z: half past, so every synthetic event falls in the same window whether
 * windows are exact to the millisecond (version 1) or to the hour (version 2). */
const NOW = Date.UTC(2025, 5, 15, 12, 30)

/** An old store on one backend and how to reach it. */
interface OldStore {
  location: StoreLocation
  url: string
  /** Runs one statement with a writing connection of its own (outside the service). */
  exec(sql: string): Promise<void>
  cleanup(): Promise<void>
}

type Build = {
  sqlite: (path: string, rows: readonly EventRow[]) => void
  postgres: (url: string, rows: readonly EventRow[]) => Promise<void>
}

function sqliteStore(build: Build['sqlite']) {
  return async (rows: readonly EventRow[]): Promise<OldStore> => {
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-migration-'))
    const path = join(dir, 'telemetry.sqlite')
    build(path, rows)
    return {
      location: { backend: 'sqlite', path },
      url: path,
      async exec(sql) {
        const db = new Database(path, { timeout: 5_000 })
        try {
          db.exec(sql)
        } finally {
          db.close()
        }
      },
      cleanup: async () => rmSync(dir, { recursive: true, force: true }),
    }
  }
}

function postgresStore(build: Build['postgres']) {
  return async (rows: readonly EventRow[]): Promise<OldStore> => {
    const schema = await createTestSchema('migration')
    await build(schema.url, rows)
    return {
      location: { backend: 'postgres', url: schema.url },
      url: schema.url,
      async exec(sql) {
        const client = new pg.Client({ connectionString: schema.url })
        await client.connect()
        try {
          await client.query(sql)
        } finally {
          await client.end()
        }
      },
      cleanup: schema.drop,
    }
  }
}

/**
 * The figures of a /stats body that version 1 answered too: without the two fields that describe
 * rather than count, and without `channels` (version 1 had no scheme).
 */
function figures(stats: Stats): V1Figures {
  const { generated_at: _g, window: _w, channels: _c, ...rest } = stats
  return rest
}

const NO_CHANNELS = { calls: 0, revenue: { atomic: '0', usdc: '0' }, share_of_calls: 0 }

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
  ['SQLite', sqliteStore(createV1Sqlite)],
  ['PostgreSQL', postgresStore(createV1Postgres)],
] as const)('upgrading a version-1 store on %s', (_name, makeV1) => {
  let store: OldStore | undefined
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
    const upgraded = await telemetry.stats()
    expect(figures(upgraded)).toEqual(before)
    expect(upgraded.channels).toEqual(NO_CHANNELS)

    await withSnapshot(location, async (reader) => {
      const versions = await reader.all('SELECT version FROM telemetry_schema_version ORDER BY 1')
      expect(versions.map((v) => Number(v.version))).toEqual([1, 2, 3, 4])
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

describe.each([
  ['SQLite', sqliteStore(createV3Sqlite)],
  ['PostgreSQL', postgresStore(createV3Postgres)],
] as const)('upgrading a version-3 store on %s', (_name, makeV3) => {
  let store: OldStore | undefined
  let telemetry: Telemetry | undefined
  afterEach(async () => {
    await telemetry?.close()
    await store?.cleanup()
    telemetry = undefined
    store = undefined
  })

  it('carries the rollups over as exact, adds the scheme totals, then counts voucher calls as channels', async () => {
    // 10 days of history; the raw events of the first 5 are pruned as version 3 prunes them, so
    // only its rollups still know them and the upgrade must carry them over, not rebuild them.
    const rows = syntheticAttempts({ attempts: 300, now: NOW, maxHoursAgo: 240, payers: 30 })
    store = await makeV3(rows)
    const location = store.location
    const before = await withSnapshot(location, (r) => v1Figures(r, NOW))
    expect(before.successful_paid_calls).toBeGreaterThan(200)
    const cutoff = Date.UTC(2025, 5, 10, 12) // on the hour, 5 days before NOW
    const pruned = rows.filter((r) => r.at < cutoff).length
    expect(pruned).toBeGreaterThan(100)
    await store.exec(
      `DELETE FROM payment_events WHERE at < ${cutoff};
       UPDATE telemetry_retention SET pruned_before = ${cutoff} WHERE id = 1`,
    )
    const hourlyRow = (r: Record<string, unknown>) =>
      [r.hour, r.outcome, r.network, r.tool, r.transport, r.calls, r.amount].map(String).join(' ')
    const hourlyBefore = await withSnapshot(location, async (reader) =>
      (await reader.all('SELECT * FROM usage_hourly')).map(hourlyRow).sort(),
    )
    expect(hourlyBefore.length).toBeGreaterThan(100)

    telemetry = await createTelemetry({
      databaseUrl: store.url,
      salt: 'migration-test-salt',
      now: () => NOW,
      cacheMs: 0,
    })
    expect(telemetry.health().status).toBe('ok')
    const upgraded = await telemetry.stats()
    expect(figures(upgraded)).toEqual(before)
    expect(upgraded.channels).toEqual(NO_CHANNELS)

    await withSnapshot(location, async (reader) => {
      const versions = await reader.all('SELECT version FROM telemetry_schema_version ORDER BY 1')
      expect(versions.map((v) => Number(v.version))).toEqual([1, 2, 3, 4])
      // The same hourly rows, every one now `exact`.
      const hourly = await reader.all('SELECT * FROM usage_hourly')
      expect(hourly.map(hourlyRow).sort()).toEqual(hourlyBefore)
      expect(new Set(hourly.map((r) => r.scheme))).toEqual(new Set(['exact']))
      const schemes = await reader.all(
        'SELECT scheme, COUNT(*) AS n FROM payment_events GROUP BY scheme',
      )
      expect(schemes.map((r) => [r.scheme, Number(r.n)])).toEqual([['exact', rows.length - pruned]])
      const totals = await reader.all(
        `SELECT item, calls, amount FROM usage_totals WHERE metric = 'settled_scheme'`,
      )
      expect(totals.map((r) => [r.item, Number(r.calls), String(r.amount)])).toEqual([
        ['exact', before.successful_paid_calls, before.revenue.lifetime.atomic],
      ])
      const result = await reconcile(reader, NOW)
      expect(result.prunedBefore).toBe(cutoff)
      for (const c of result.comparisons) expect(c.differences, c.name).toEqual([])
    })

    // After the upgrade, as the payment gate records them: three voucher calls that settled, one
    // whose tool failed (charged nothing), one exact call.
    const call = (
      tool: string,
      amount: string,
      outcome: 'settled' | 'tool_failed_unsettled',
      scheme?: 'batch-settlement',
    ): PaymentEvent[] => {
      const base = {
        tool,
        transport: 'http' as const,
        network: 'eip155:8453',
        amount,
        payer: '0x00000000000000000000000000000000000000c1',
        // The current hour, which no synthetic event falls in.
        at: NOW,
        ...(scheme ? { scheme } : {}),
      }
      return [
        { ...base, outcome: 'verified' },
        { ...base, outcome },
      ]
    }
    for (const event of [
      ...call('hash', '1000', 'settled', 'batch-settlement'),
      ...call('base64', '1000', 'settled', 'batch-settlement'),
      ...call('pipeline', '3000', 'settled', 'batch-settlement'),
      ...call('hmac', '1000', 'tool_failed_unsettled', 'batch-settlement'),
      ...call('hash', '1000', 'settled'),
    ])
      await telemetry.record(event)
    const later = await telemetry.stats()
    const plus = (m: { atomic: string }, atomic: bigint) => (BigInt(m.atomic) + atomic).toString()
    expect(later.paid_calls).toBe(before.paid_calls + 5)
    expect(later.successful_paid_calls).toBe(before.successful_paid_calls + 4)
    expect(later.revenue.lifetime.atomic).toBe(plus(before.revenue.lifetime, 6000n))
    expect(later.revenue.last_24h.atomic).toBe(plus(before.revenue.last_24h, 6000n))
    expect(later.channels).toEqual({
      calls: 3,
      revenue: { atomic: '5000', usdc: '0.005' },
      share_of_calls: 3 / (before.successful_paid_calls + 4),
    })
    const check = () =>
      withSnapshot(location, async (reader) =>
        Object.fromEntries(
          (await reconcile(reader, NOW)).comparisons.map((c) => [
            c.name.split(' ')[0],
            c.differences,
          ]),
        ),
      )
    const clean = {
      '/stats': [],
      usage_hourly: [],
      payers: [],
      settled_hourly: [],
      usage_totals: [],
    }
    expect(await check()).toEqual(clean)

    // stats:check catches a scheme total that drifted from the hourly rows and the raw events...
    await store.exec(
      `UPDATE usage_totals SET calls = calls + 1
       WHERE metric = 'settled_scheme' AND item = 'batch-settlement'`,
    )
    const settled = later.successful_paid_calls
    expect(await check()).toEqual({
      ...clean,
      '/stats': [
        'channels.calls: rollups 4, raw events 3',
        `channels.share_of_calls: rollups ${4 / settled}, raw events ${3 / settled}`,
      ],
      usage_totals: [
        'settled_scheme/batch-settlement: rollups 4 calls / 5000 atomic, usage_hourly/payers 3 calls / 5000 atomic',
      ],
    })
    // ... and a voucher call whose raw event says otherwise than its hourly row.
    await store.exec(
      `UPDATE usage_totals SET calls = calls - 1
       WHERE metric = 'settled_scheme' AND item = 'batch-settlement';
       UPDATE payment_events SET scheme = 'exact'
       WHERE tool = 'pipeline' AND outcome = 'settled' AND scheme = 'batch-settlement'`,
    )
    const row = `${Math.floor(NOW / HOUR)} settled eip155:8453 pipeline http`
    expect(await check()).toEqual({
      ...clean,
      '/stats': [
        'channels.calls: rollups 3, raw events 2',
        'channels.revenue.atomic: rollups "5000", raw events "2000"',
        'channels.revenue.usdc: rollups "0.005", raw events "0.002"',
        `channels.share_of_calls: rollups ${3 / settled}, raw events ${2 / settled}`,
      ],
      usage_hourly: [
        `${row} batch-settlement: rollups 1 calls / 3000 atomic, raw events missing`,
        `${row} exact: rollups missing, raw events 1 calls / 3000 atomic`,
      ],
    })

    // The events table refuses a scheme it does not know, whoever writes it.
    await expect(
      store.exec(
        `INSERT INTO payment_events (id, at, tool, transport, network, amount, outcome, scheme)
         VALUES ('00000000-0000-4000-8000-0000000000ff', 1, 'hash', 'http', 'eip155:8453', 1,
                 'settled', 'upto')`,
      ),
    ).rejects.toThrow(/check constraint/i)
  })
})
