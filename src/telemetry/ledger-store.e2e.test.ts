import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { ledgerContract } from '../../test/helpers/ledger-contract.js'
import { createTestSchema, type TestSchema } from '../../test/helpers/pg-schema.js'
import { settlementEventId } from './event-row.js'
import type { SettlementLedger } from './ledger.js'
import { createPostgresStore } from './postgres-store.js'
import { createSqliteStore } from './sqlite-store.js'
import { createTelemetry, type Telemetry } from './telemetry.js'
import type { TelemetryStore } from './types.js'

// The ledger contract on the real stores: the machine's PostgreSQL, each test in a fresh schema
// (the claim's concurrency there is real: two pooled connections, SKIP LOCKED), and the SQLite
// store through its worker thread and telemetry's facade (migrated before the first operation).
const closers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closers) await close()
})

ledgerContract('PostgreSQL', async () => {
  const schema: TestSchema = await createTestSchema('ledger')
  const store: TelemetryStore = createPostgresStore(schema.url)
  closers.push(async () => {
    await store.close()
    await schema.drop()
  })
  await store.migrate()
  return store.ledger as SettlementLedger
})

ledgerContract('SQLite store, through telemetry', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-store-'))
  const telemetry: Telemetry = await createTelemetry({
    databaseUrl: join(dir, 'telemetry.sqlite'),
    dataDir: dir,
    salt: 'ledger-store-test-salt',
  })
  closers.push(async () => {
    await telemetry.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return telemetry.ledger as SettlementLedger
})

/** A telemetry on each real backend, for the writes that carry a ledger outcome. */
const backends: [string, () => Promise<Telemetry>][] = [
  [
    'PostgreSQL',
    async () => {
      const schema = await createTestSchema('ledger_event')
      const telemetry = await createTelemetry({
        databaseUrl: schema.url,
        salt: 'ledger-event-salt',
      })
      closers.push(async () => {
        await telemetry.close()
        await schema.drop()
      })
      return telemetry
    },
  ],
  [
    'SQLite',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'ledger-event-'))
      const telemetry = await createTelemetry({
        databaseUrl: join(dir, 'telemetry.sqlite'),
        dataDir: dir,
        salt: 'ledger-event-salt',
      })
      closers.push(async () => {
        await telemetry.close()
        rmSync(dir, { recursive: true, force: true })
      })
      return telemetry
    },
  ],
]

describe.each(backends)('an event that carries its intent outcome (%s)', (_, open) => {
  const key = 'pay:event-and-outcome'
  const T0 = Date.UTC(2026, 10, 28, 12, 0)
  const intent = {
    key,
    network: 'eip155:8453',
    amount: '1000',
    tool: 'hash',
    transport: 'http' as const,
    createdAt: T0,
    expiresAt: T0 + 120_000,
    question: null,
  }
  const settled = (at: number) => ({
    tool: 'hash',
    transport: 'http' as const,
    network: 'eip155:8453',
    amount: '1000',
    outcome: 'settled' as const,
    id: settlementEventId(key, 'settled'),
    decides: { key, decision: { outcome: 'settled' as const, transaction: '0xfeed', at } },
  })

  it('is committed with the outcome in one write, and counted once when written again', async () => {
    const telemetry = await open()
    const ledger = telemetry.ledger as SettlementLedger
    await ledger.intend(intent, T0 + 60_000)
    expect(await telemetry.record(settled(T0 + 1_000))).toBe(true)
    expect(await ledger.get(key)).toMatchObject({
      outcome: 'settled',
      transaction: '0xfeed',
      decidedAt: T0 + 1_000,
    })
    // Again (a retry, the resolver after a crash): the outcome stays the first, the event one.
    expect(await telemetry.record(settled(T0 + 9_000))).toBe(true)
    expect((await ledger.get(key))?.decidedAt).toBe(T0 + 1_000)
    expect((await telemetry.stats()).successful_paid_calls).toBe(1)
  })
})

describe('the SQLite store, writes gathered while a transaction commits', () => {
  it('commits them together, and a write refused for its own data fails alone', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ledger-batch-'))
    const store = createSqliteStore(join(dir, 'telemetry.sqlite'))
    closers.push(async () => {
      await store.close()
      rmSync(dir, { recursive: true, force: true })
    })
    await store.migrate()
    const ledger = store.ledger as SettlementLedger
    const T0 = Date.UTC(2026, 10, 28, 13, 0)
    const intent = (key: string, amount: string) => ({
      key,
      network: 'eip155:8453',
      amount,
      tool: 'hash',
      transport: 'http' as const,
      createdAt: T0,
      expiresAt: T0 + 120_000,
      question: null,
    })
    // Sent in one turn: the first goes alone, the others wait for its commit and go as one batch.
    const keys = Array.from({ length: 20 }, (_, i) => `pay:batch-${i}`)
    const writes = keys.map((key, i) =>
      // One amount below zero: the table's CHECK refuses it, in a savepoint of its own.
      ledger.intend(intent(key, i === 7 ? '-1' : '1000'), T0 + 60_000),
    )
    const outcomes = await Promise.allSettled(writes)
    expect(outcomes.map((o) => o.status)).toEqual(
      keys.map((_, i) => (i === 7 ? 'rejected' : 'fulfilled')),
    )
    const stored = await Promise.all(keys.map((key) => ledger.get(key)))
    expect(stored.map((entry) => entry?.amount)).toEqual(
      keys.map((_, i) => (i === 7 ? undefined : '1000')),
    )
  })
})
