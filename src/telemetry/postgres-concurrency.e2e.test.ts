import { randomUUID } from 'node:crypto'
import { setImmediate as tick } from 'node:timers/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createTestSchema, type TestSchema } from '../../test/helpers/pg-schema.js'
import { syntheticPayerKey } from '../../test/helpers/telemetry-events.js'
import { v1Figures } from '../../test/helpers/telemetry-v1.js'
import { createPostgresStore } from './postgres-store.js'
import { reconcile } from './reconcile.js'
import { openSnapshot } from './snapshot.js'
import { buildStats } from './stats.js'
import type { EventRow, Outcome, TelemetryStore } from './types.js'
import { windowsAt } from './windows.js'

// Two instances share one PostgreSQL schema and write at once: many concurrent transactions that
// touch the same hot rollup rows (one hour, one tool, one network) and the same payers from both
// sides, so that every payer's 0 -> 1 and 1 -> 2 crossing races between instances. Every insert
// must commit (a deadlock would reject one), and every figure must be exact.

const HOUR = 3_600_000
/** Half past an hour: see syntheticAttempts. */
const NOW = Date.UTC(2025, 5, 15, 12, 30)
const PAYERS = 150

/** Settled calls of payer i: 1, 2, 3 or 5, so both crossings happen and some payers stay single. */
const callsOf = (i: number) => [1, 2, 3, 5][i % 4] as number

/** Payer i's n-th settled call is paid by a voucher of a prepaid channel when this holds. */
const byVoucher = (i: number, n: number) => (i + n) % 3 === 0

function row(outcome: Outcome, payerKey: string | null, at: number, voucher = false): EventRow {
  return {
    id: randomUUID(),
    at,
    tool: 'hash',
    transport: 'http',
    network: 'eip155:8453',
    amount: '1000',
    outcome,
    ...(voucher ? { scheme: 'batch-settlement' as const } : {}),
    payerKey,
  }
}

/**
 * Each instance's rows, round by round (a payer's n-th settled call is in round n): a payer's
 * calls alternate between the two instances, so its crossings race between them. Within a round
 * instance A goes up the payer keys and instance B down, so concurrent transactions hold the same
 * payers' rows in opposite orders unless the store sorts them. Every settled call comes after its
 * `verified` event, and each payer also has one failed attempt.
 */
function script(): [EventRow[], EventRow[]] {
  const a: EventRow[] = []
  const b: EventRow[] = []
  const maxCalls = Math.max(...Array.from({ length: PAYERS }, (_, i) => callsOf(i)))
  for (let n = 0; n < maxCalls; n++) {
    const groupsB: EventRow[][] = []
    for (let i = 0; i < PAYERS; i++) {
      if (n >= callsOf(i)) continue
      const key = syntheticPayerKey(i)
      const at = NOW - HOUR + n * 1000
      const voucher = byVoucher(i, n)
      const group = [row('verified', key, at, voucher), row('settled', key, at, voucher)]
      if (n === 0) group.push(row('verified', key, at), row('settle_failed', key, at))
      if ((i + n) % 2 === 0) a.push(...group)
      else groupsB.push(group)
    }
    b.push(...groupsB.reverse().flat())
  }
  return [a, b]
}

/**
 * Writes `rows` in insert calls of `chunk` rows without waiting for commits, yielding between
 * calls: the group-commit queue runs up to `writeConcurrency` transactions at once and merges the
 * rest. Multi-row calls make transactions that lock many payers; instance B's come in the
 * opposite payer order, which deadlocks unless every writer locks in one order.
 */
async function writeAll(store: TelemetryStore, rows: readonly EventRow[], chunk: number) {
  const calls: Promise<void>[] = []
  for (let i = 0; i < rows.length; i += chunk) {
    calls.push(store.insert(rows.slice(i, i + chunk)))
    await tick()
  }
  const results = await Promise.allSettled(calls)
  const failed = results.filter((r) => r.status === 'rejected')
  expect(failed.map((f) => String((f as PromiseRejectedResult).reason))).toEqual([])
}

describe('PostgreSQL rollups under concurrent writers from two instances', () => {
  let schema: TestSchema
  let a: TelemetryStore
  let b: TelemetryStore

  beforeAll(async () => {
    schema = await createTestSchema('concurrency')
    a = createPostgresStore(schema.url, { writeConcurrency: 4 })
    b = createPostgresStore(schema.url, { writeConcurrency: 4 })
    // Both start at once: the migration lock lets one migrate while the other waits.
    await Promise.all([a.migrate(), b.migrate()])
  })
  afterAll(async () => {
    await a?.close()
    await b?.close()
    await schema?.drop()
  })

  it('counts every event, payer crossing and sum exactly', async () => {
    const [rowsA, rowsB] = script()
    // Calls of 24 rows (up to 12 payers each), then single rows, both instances at once.
    const half = (rows: EventRow[]) => Math.floor(rows.length / 2)
    await Promise.all([
      writeAll(a, rowsA.slice(0, half(rowsA)), 24).then(() =>
        writeAll(a, rowsA.slice(half(rowsA)), 1),
      ),
      writeAll(b, rowsB.slice(0, half(rowsB)), 24).then(() =>
        writeAll(b, rowsB.slice(half(rowsB)), 1),
      ),
    ])

    const perPayer = Array.from({ length: PAYERS }, (_, i) => callsOf(i))
    const settledCalls = perPayer.reduce((x, y) => x + y)
    const repeatPayers = perPayer.filter((calls) => calls >= 2).length
    expect([settledCalls, repeatPayers]).toEqual([410, 112])
    let voucherCalls = 0
    for (let i = 0; i < PAYERS; i++)
      for (let n = 0; n < callsOf(i); n++) if (byVoucher(i, n)) voucherCalls++
    const w = windowsAt(NOW)
    const stats = buildStats(await a.read(w), w, 0)
    expect(stats).toMatchObject({
      paid_calls: settledCalls + PAYERS,
      successful_paid_calls: settledCalls,
      unique_payers: PAYERS,
      repeat_payers: repeatPayers,
      repeat_paid_calls: settledCalls - PAYERS,
      revenue: {
        lifetime: { atomic: String(settledCalls * 1000) },
        last_24h: { atomic: String(settledCalls * 1000) },
      },
      networks: { 'eip155:8453': { calls: settledCalls } },
      tools: { hash: { calls: settledCalls } },
      channels: { calls: voucherCalls, revenue: { atomic: String(voucherCalls * 1000) } },
    })
    expect(voucherCalls).toBeGreaterThan(100)

    // The same figures as version 1's aggregates over the raw events, and no drift anywhere.
    const reader = await openSnapshot({ backend: 'postgres', url: schema.url })
    try {
      const { generated_at: _g, window: _w, channels: _c, ...figures } = stats
      expect(figures).toEqual(await v1Figures(reader, NOW))
      const result = await reconcile(reader, NOW)
      for (const c of result.comparisons) expect(c.differences, c.name).toEqual([])
    } finally {
      await reader.close()
    }
  })

  it('counts rows that both instances insert at once only once', async () => {
    const w = windowsAt(NOW)
    const before = buildStats(await a.read(w), w, 0)
    const key = syntheticPayerKey(PAYERS + 1)
    const rows = Array.from({ length: 40 }, (_, n) => row('settled', key, NOW - HOUR + n))
    // The same ids from both sides, in opposite orders, as a retry after a lost answer would.
    await Promise.all([writeAll(a, rows, 1), writeAll(b, [...rows].reverse(), 5)])
    const after = buildStats(await b.read(w), w, 0)
    expect(after.successful_paid_calls - before.successful_paid_calls).toBe(40)
    expect(after.unique_payers - before.unique_payers).toBe(1)
    expect(after.repeat_payers - before.repeat_payers).toBe(1)
    const reader = await openSnapshot({ backend: 'postgres', url: schema.url })
    try {
      const result = await reconcile(reader, NOW)
      for (const c of result.comparisons) expect(c.differences, c.name).toEqual([])
    } finally {
      await reader.close()
    }
  })
})
