import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import pg from 'pg'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { syntheticAttempts } from '../../test/helpers/telemetry-events.js'
import { logger } from '../logger.js'
import { type Reconciliation, reconcile } from './reconcile.js'
import { openSnapshot } from './snapshot.js'
import { createSqliteStore } from './sqlite-store.js'
import { createTelemetryStore, type StoreLocation } from './store.js'
import { createTelemetry, type Telemetry, type TelemetryOptions } from './telemetry.js'
import { type EventRow, type PaymentEvent, type Stats, TelemetryUnavailableError } from './types.js'
import { windowsAt } from './windows.js'

const PG_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test'
const BASE = 'eip155:8453'
const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
/** EVM address in EIP-55 checksummed spelling, a Solana base58 public key, another EVM one. */
const PAYER_A = '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B'
const PAYER_B = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM'
const PAYER_C = '0x52908400098527886E0F7030069857D2E4169EE7'
const HOUR = 3_600_000
const DAY = 24 * HOUR
/** 2025-06-15T12:00:00.000Z */
const NOW = Date.UTC(2025, 5, 15, 12)

/** Test-only control over one real backend. */
interface Fixture {
  databaseUrl: string | undefined
  dataDir: string
  /** The store, for read-only snapshots (`stats:check`'s reconciliation). */
  location: StoreLocation
  /** Makes the real store unavailable: `hang` answers nothing, `refuse` refuses connections. */
  down(kind: 'hang' | 'refuse'): Promise<void>
  up(): Promise<void>
  /** Every value of every column of every table, as text. */
  dumpAll(): Promise<string[]>
  /** Raw bytes of the database files, when the backend keeps them locally. */
  files(): Buffer[]
  count(sql: string): Promise<number>
  cleanup(): Promise<void>
}

/**
 * SQLite fixture. Down = another connection holds the write lock (`BEGIN EXCLUSIVE`), as a backup
 * tool or the sqlite3 shell would: our writes fail with SQLITE_BUSY after the busy timeout.
 */
async function sqliteFixture(): Promise<Fixture> {
  const dataDir = mkdtempSync(join(tmpdir(), 'telemetry-test-'))
  const file = join(dataDir, 'telemetry.sqlite')
  let locker: Database.Database | undefined
  const read = <T>(fn: (db: Database.Database) => T): T => {
    const db = new Database(file, { readonly: true })
    try {
      return fn(db)
    } finally {
      db.close()
    }
  }
  return {
    databaseUrl: undefined,
    dataDir,
    location: { backend: 'sqlite', path: file },
    async down() {
      locker = new Database(file, { timeout: 5_000 })
      locker.exec('BEGIN EXCLUSIVE')
    },
    async up() {
      locker?.exec('COMMIT')
      locker?.close()
      locker = undefined
    },
    async dumpAll() {
      return read((db) => {
        const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).all() as {
          name: string
        }[]
        return tables.flatMap(({ name }) =>
          (db.prepare(`SELECT * FROM "${name}"`).all() as Record<string, unknown>[]).flatMap(
            (row) => Object.values(row).map((v) => String(v)),
          ),
        )
      })
    },
    files() {
      return [file, `${file}-wal`, `${file}-shm`]
        .filter((f) => existsSync(f))
        .map((f) => readFileSync(f))
    },
    async count(sql) {
      return read((db) => Number(Object.values(db.prepare(sql).get() as object)[0]))
    },
    async cleanup() {
      locker?.close()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

/**
 * A TCP proxy in front of the real PostgreSQL. `hang` stops forwarding on open connections and
 * accepts new ones without answering (a network partition or a wedged server); `refuse` closes
 * the listener and every connection (the server is gone); `forward` restores the path.
 */
async function createProxy(targetPort: number) {
  let mode: 'forward' | 'hang' | 'refuse' = 'forward'
  const pairs = new Set<[Socket, Socket | undefined]>()
  const onConnection = (client: Socket) => {
    client.on('error', () => {})
    if (mode !== 'forward') {
      pairs.add([client, undefined])
      return
    }
    const upstream = tcpConnect(targetPort, '127.0.0.1')
    upstream.on('error', () => client.destroy())
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
    pairs.add([client, upstream])
  }
  let server: Server = createServer(onConnection)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  const destroyAll = () => {
    for (const [client, upstream] of pairs) {
      client.destroy()
      upstream?.destroy()
    }
    pairs.clear()
  }
  return {
    port,
    async set(next: 'forward' | 'hang' | 'refuse') {
      if (next === 'hang') {
        for (const [client, upstream] of pairs) {
          if (!upstream) continue
          client.unpipe(upstream)
          upstream.unpipe(client)
          client.pause()
          upstream.pause()
        }
      }
      if (next === 'refuse') {
        destroyAll()
        await new Promise<void>((resolve) => server.close(() => resolve()))
      }
      if (next === 'forward') {
        destroyAll()
        if (mode === 'refuse') {
          server = createServer(onConnection)
          await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve))
        }
      }
      mode = next
    },
    async close() {
      destroyAll()
      if (mode !== 'refuse') await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** PostgreSQL fixture: a fresh schema per test, reached through {@link createProxy}. */
async function postgresFixture(): Promise<Fixture> {
  const schema = `t_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  const proxy = await createProxy(5432)
  const options = encodeURIComponent(`-c search_path=${schema}`)
  const dataDir = mkdtempSync(join(tmpdir(), 'telemetry-test-'))
  return {
    databaseUrl: `postgres://postgres@127.0.0.1:${proxy.port}/test?options=${options}`,
    dataDir,
    // Straight to the server: a snapshot must not depend on the proxy being up.
    location: { backend: 'postgres', url: `${PG_ADMIN_URL}?options=${options}` },
    async down(kind) {
      await proxy.set(kind)
    },
    async up() {
      await proxy.set('forward')
    },
    async dumpAll() {
      const { rows: columns } = await admin.query(
        'SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = $1',
        [schema],
      )
      const values: string[] = []
      for (const { table_name, column_name } of columns) {
        const { rows } = await admin.query(
          `SELECT "${column_name}"::text AS v FROM ${schema}."${table_name}"`,
        )
        values.push(...rows.map((r) => String(r.v)))
      }
      return values
    },
    files: () => [],
    async count(sql) {
      await admin.query(`SET search_path = ${schema}`)
      const { rows } = await admin.query(sql)
      return Number(Object.values(rows[0] as object)[0])
    },
    async cleanup() {
      await proxy.close()
      await admin.query(`DROP SCHEMA ${schema} CASCADE`)
      await admin.end()
      rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

async function waitFor(predicate: () => boolean, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/** Asserts that `stats:check`'s reconciliation finds no difference between rollups and events. */
async function expectNoDrift(location: StoreLocation, now: number): Promise<Reconciliation> {
  const reader = await openSnapshot(location)
  try {
    const result = await reconcile(reader, now)
    for (const c of result.comparisons) expect(c.differences, c.name).toEqual([])
    return result
  } finally {
    await reader.close()
  }
}

const hmac = (salt: string, address: string) =>
  createHmac('sha256', salt).update(address.toLowerCase()).digest('hex')

/** Both notations of an atomic amount, spelled out by hand. */
const m = (atomic: string, usdc: string) => ({ atomic, usdc })

/** A verified event followed by its final outcome, as the payment gate records them. */
function attempt(
  outcome: 'settled' | 'settle_failed' | 'tool_failed_unsettled',
  base: Omit<PaymentEvent, 'outcome'>,
): PaymentEvent[] {
  return [
    { ...base, outcome: 'verified' },
    { ...base, outcome },
  ]
}

describe.each([
  ['sqlite', sqliteFixture],
  ['postgres', postgresFixture],
] as const)('telemetry on %s', (backend, makeFixture) => {
  let fx: Fixture
  const open: Telemetry[] = []

  async function start(options: TelemetryOptions = {}): Promise<Telemetry> {
    const telemetry = await createTelemetry({
      databaseUrl: fx.databaseUrl,
      dataDir: fx.dataDir,
      salt: 'test-salt',
      now: () => NOW,
      cacheMs: 0,
      ...options,
    })
    open.push(telemetry)
    return telemetry
  }

  async function recordAll(telemetry: Telemetry, events: PaymentEvent[]): Promise<void> {
    for (const event of events) await telemetry.record(event)
  }

  beforeAll(async () => {
    fx = await makeFixture()
  })
  afterEach(async () => {
    await fx.up()
    await Promise.all(open.splice(0).map((t) => t.close()))
    vi.restoreAllMocks()
    await fx.cleanup()
    fx = await makeFixture()
  })
  afterAll(async () => {
    await fx.cleanup()
  })

  it('computes the exact aggregates of a scripted sequence', async () => {
    const telemetry = await start()
    expect(telemetry.health()).toEqual({
      status: 'ok',
      backend,
      buffered: 0,
      dropped: 0,
      salt: 'configured',
    })
    const http = 'http' as const
    const mcp = 'mcp' as const
    await recordAll(telemetry, [
      // lifetime only (10 days ago)
      ...attempt('settled', {
        tool: 'hash',
        transport: http,
        network: BASE,
        amount: '1000',
        payer: PAYER_A,
        at: NOW - 10 * DAY,
      }),
      // 7 d, 2025-06-12; a voucher of a prepaid channel
      ...attempt('settled', {
        tool: 'json-validate',
        transport: mcp,
        network: BASE,
        amount: '2000',
        scheme: 'batch-settlement',
        payer: PAYER_A,
        at: NOW - 3 * DAY,
      }),
      // 24 h, today
      ...attempt('settled', {
        tool: 'hash',
        transport: http,
        network: SOLANA,
        amount: '1000',
        payer: PAYER_B,
        at: NOW - HOUR,
      }),
      ...attempt('settle_failed', {
        tool: 'text-diff',
        transport: http,
        network: SOLANA,
        amount: '3000',
        payer: PAYER_B,
        at: NOW - 2 * HOUR,
      }),
      // a voucher whose call failed: not counted in channels
      ...attempt('tool_failed_unsettled', {
        tool: 'jwt-inspect',
        transport: mcp,
        network: BASE,
        amount: '5000',
        scheme: 'batch-settlement',
        payer: PAYER_C,
        at: NOW - HOUR / 2,
      }),
      // 24 h, today
      ...attempt('settled', {
        tool: 'hash',
        transport: http,
        network: SOLANA,
        amount: '1000',
        payer: PAYER_A,
        at: NOW - 5 * HOUR,
      }),
      // 7 d, 2025-06-13; a voucher of a prepaid channel
      ...attempt('settled', {
        tool: 'pipeline',
        transport: http,
        network: BASE,
        amount: '1500000',
        scheme: 'batch-settlement',
        payer: PAYER_C,
        at: NOW - 2 * DAY,
      }),
    ])
    const { generated_at, ...stats } = await telemetry.stats()
    expect(generated_at).toBe('2025-06-15T12:00:00.000Z')
    expect(stats).toEqual({
      paid_calls: 7,
      successful_paid_calls: 5,
      unique_payers: 3,
      repeat_payers: 1,
      repeat_paid_calls: 2,
      repeat_call_rate: 0.4,
      revenue: {
        lifetime: m('1505000', '1.505'),
        last_24h: m('2000', '0.002'),
        last_7d: m('1504000', '1.504'),
      },
      networks: {
        [BASE]: { calls: 3, revenue: m('1503000', '1.503') },
        [SOLANA]: { calls: 2, revenue: m('2000', '0.002') },
      },
      tools: { hash: { calls: 3 }, 'json-validate': { calls: 1 }, pipeline: { calls: 1 } },
      // json-validate and pipeline, settled by vouchers; of 5 settled calls
      channels: { calls: 2, revenue: m('1502000', '1.502'), share_of_calls: 0.4 },
      daily: [
        { date: '2025-06-09', calls: 0, revenue: m('0', '0') },
        { date: '2025-06-10', calls: 0, revenue: m('0', '0') },
        { date: '2025-06-11', calls: 0, revenue: m('0', '0') },
        { date: '2025-06-12', calls: 1, revenue: m('2000', '0.002') },
        { date: '2025-06-13', calls: 1, revenue: m('1500000', '1.5') },
        { date: '2025-06-14', calls: 0, revenue: m('0', '0') },
        { date: '2025-06-15', calls: 2, revenue: m('2000', '0.002') },
      ],
      window: {
        last_24h:
          'settled events in the current UTC hour so far and the 23 whole hours before it (exact to the hour)',
        last_7d:
          'settled events in the current UTC hour so far and the 167 whole hours before it (exact to the hour)',
        daily:
          'settled events per UTC calendar day, 7 days oldest first ending today; today runs from 00:00 UTC to now',
        cache_seconds: 0,
      },
    } satisfies Omit<Stats, 'generated_at'>)
    // stats:check recomputes the same figures, channels included, from the raw events.
    await expectNoDrift(fx.location, NOW)
  })

  it('puts window boundaries on the documented side, to the UTC hour', async () => {
    const telemetry = await start()
    const dailyStart = Date.UTC(2025, 5, 9)
    const settled = (at: number, amount: string): PaymentEvent => ({
      tool: 'hash',
      transport: 'http',
      network: BASE,
      amount,
      outcome: 'settled',
      payer: PAYER_A,
      at,
    })
    await recordAll(telemetry, [
      settled(NOW - 23 * HOUR, '1'), // 24 h: in (its first hour, 2025-06-14 13:00)
      settled(NOW - 23 * HOUR - 1, '10'), // 24 h: out (the hour before); 7 d: in
      settled(NOW - 167 * HOUR, '100'), // 7 d: in (its first hour); daily: out (2025-06-08)
      settled(NOW - 167 * HOUR - 1, '1000'), // 7 d: out; lifetime only
      settled(NOW, '10000'), // every window (now is in the current hour)
      settled(NOW + HOUR - 1, '100000'), // the current hour: every window
      settled(NOW + HOUR, '1000000'), // the next hour: lifetime only
      settled(dailyStart, '10000000'), // daily: in (first day starts here); 7 d: in
      settled(dailyStart - 1, '100000000'), // daily: out; 7 d: in
    ])
    const stats = await telemetry.stats()
    expect(stats.revenue).toEqual({
      lifetime: m('111111111', '111.111111'),
      last_24h: m('110001', '0.110001'),
      last_7d: m('110110111', '110.110111'),
    })
    expect(stats.daily).toEqual([
      { date: '2025-06-09', calls: 1, revenue: m('10000000', '10') },
      { date: '2025-06-10', calls: 0, revenue: m('0', '0') },
      { date: '2025-06-11', calls: 0, revenue: m('0', '0') },
      { date: '2025-06-12', calls: 0, revenue: m('0', '0') },
      { date: '2025-06-13', calls: 0, revenue: m('0', '0') },
      { date: '2025-06-14', calls: 2, revenue: m('11', '0.000011') },
      { date: '2025-06-15', calls: 2, revenue: m('110000', '0.11') },
    ])
  })

  it('counts repeat payers from settled events only', async () => {
    const telemetry = await start()
    const base = { tool: 'hash', transport: 'http', network: BASE, amount: '1000' } as const
    const p = (n: number) => `0x${String(n).repeat(40)}`
    await recordAll(telemetry, [
      // payer 1: one settled call, plus failures and a bare verify that must not count
      ...attempt('settled', { ...base, payer: p(1) }),
      ...attempt('settle_failed', { ...base, payer: p(1) }),
      ...attempt('tool_failed_unsettled', { ...base, payer: p(1) }),
      { ...base, outcome: 'verified', payer: p(1) },
      // payer 2: two settled calls
      ...attempt('settled', { ...base, payer: p(2) }),
      ...attempt('settled', { ...base, payer: p(2) }),
      // payer 3: three settled calls, the checksum spelling must not split the payer
      ...attempt('settled', { ...base, payer: p(3) }),
      ...attempt('settled', { ...base, payer: p(3).toUpperCase().replace('0X', '0x') }),
      ...attempt('settled', { ...base, payer: p(3) }),
      // payer 4: only failures, never a payer
      ...attempt('settle_failed', { ...base, payer: p(4) }),
      ...attempt('settle_failed', { ...base, payer: p(4) }),
    ])
    let stats = await telemetry.stats()
    expect(stats).toMatchObject({
      paid_calls: 11,
      successful_paid_calls: 6,
      unique_payers: 3,
      repeat_payers: 2,
      repeat_paid_calls: 3,
      repeat_call_rate: 0.5,
    })
    // A settled call without a payer counts as successful but belongs to no payer.
    await telemetry.record({ ...base, outcome: 'settled' })
    stats = await telemetry.stats()
    expect(stats).toMatchObject({
      successful_paid_calls: 7,
      unique_payers: 3,
      repeat_payers: 2,
      repeat_paid_calls: 3,
      repeat_call_rate: 3 / 7,
    })
  })

  it('never stores or logs a raw payer address', async () => {
    const logged: string[] = []
    for (const level of ['info', 'warn', 'error'] as const) {
      vi.spyOn(logger, level).mockImplementation((...args: unknown[]) => {
        logged.push(JSON.stringify(args))
      })
    }
    const telemetry = await start({ writeTimeoutMs: 300, retryIntervalMs: 50 })
    const base = { tool: 'hash', transport: 'http', network: BASE, amount: '1000' } as const
    await recordAll(telemetry, [
      ...attempt('settled', { ...base, payer: PAYER_A }),
      ...attempt('settled', { ...base, network: SOLANA, payer: PAYER_B }),
    ])
    // Also through the buffer path, which logs.
    await fx.down('refuse')
    await telemetry.record({ ...base, outcome: 'settled', payer: PAYER_A })
    await fx.up()
    await waitFor(() => telemetry.health().status === 'ok')
    await telemetry.close()

    const values = await fx.dumpAll()
    expect(values).toContain(hmac('test-salt', PAYER_A))
    expect(values).toContain(hmac('test-salt', PAYER_B))
    const haystacks = [
      values.join('\n'),
      ...fx.files().map((bytes) => bytes.toString('latin1')),
      logged.join('\n'),
    ]
    expect(logged.length).toBeGreaterThan(0)
    for (const text of haystacks) {
      for (const address of [PAYER_A, PAYER_B]) {
        expect(text).not.toContain(address)
        expect(text).not.toContain(address.toLowerCase())
        expect(text).not.toContain(address.slice(2).toLowerCase())
      }
    }
  })

  it('keeps answering while the store is down and flushes every event exactly once', async () => {
    const writes: string[] = []
    const telemetry = await start({
      writeTimeoutMs: 300,
      retryIntervalMs: 50,
      onWrite: (w) => writes.push(w.result),
    })
    const event = (amount: string): PaymentEvent => ({
      tool: 'hash',
      transport: 'http',
      network: BASE,
      amount,
      outcome: 'settled',
      payer: PAYER_A,
    })
    await telemetry.record(event('1'))
    await fx.down('hang')

    // The first write meets the outage and is cut off by the write timeout (SQLite: the 200 ms
    // busy timeout): it resolves while the store still hangs, with the event buffered.
    await telemetry.record(event('2'))
    expect(telemetry.health()).toMatchObject({ status: 'degraded', buffered: 1 })
    // The rest go straight to the buffer: buffered before record() even yields, no store call.
    for (const [i, amount] of ['3', '4', '5', '6'].entries()) {
      const recorded = telemetry.record(event(amount))
      expect(telemetry.health().buffered).toBe(i + 2)
      await recorded
    }
    expect(telemetry.health()).toMatchObject({ status: 'degraded', buffered: 5, dropped: 0 })
    await expect(telemetry.stats()).rejects.toBeInstanceOf(TelemetryUnavailableError)

    // Several retries fail while down; nothing is lost or duplicated by them.
    await new Promise((resolve) => setTimeout(resolve, 400))
    expect(telemetry.health().buffered).toBe(5)

    await fx.up()
    await waitFor(() => telemetry.health().status === 'ok')
    expect(telemetry.health()).toEqual({
      status: 'ok',
      backend,
      buffered: 0,
      dropped: 0,
      salt: 'configured',
    })
    expect(await fx.count('SELECT COUNT(*) FROM payment_events')).toBe(6)
    expect(await fx.count('SELECT COUNT(DISTINCT amount) FROM payment_events')).toBe(6)
    const stats = await telemetry.stats()
    expect(stats.successful_paid_calls).toBe(6)
    expect(stats.revenue.lifetime).toEqual(m('21', '0.000021'))
    // The write cut off by the outage may have committed before the flush repeated it: the
    // rollups still count every event once.
    await expectNoDrift(fx.location, NOW)
    // Each insert reported: the first committed, the one that met the outage and the retries
    // failed, the flush that emptied the buffer committed.
    expect(writes[0]).toBe('ok')
    expect(writes[1]).toBe('error')
    expect(writes.at(-1)).toBe('ok')
    expect(new Set(writes)).toEqual(new Set(['ok', 'error']))
  })

  it('prunes raw events past the retention without changing a /stats figure', async () => {
    const store = createTelemetryStore(fx.databaseUrl, { dataDir: fx.dataDir })
    const telemetry = await start({ store, retentionDays: 3 })
    expect(await telemetry.prune()).toBe(0) // the pass started with telemetry found nothing
    // 10 days of history (3,000 events, some Base calls paid by vouchers), written straight to
    // the store.
    const rows = syntheticAttempts({
      attempts: 1_500,
      now: NOW,
      maxHoursAgo: 240,
      payers: 30,
      vouchers: 0.5,
    })
    await store.insert(rows)
    const cutoff = NOW - 3 * DAY // NOW is on the hour: the cut is exactly 3 days back
    const old = rows.filter((r) => r.at < cutoff).length
    expect(old).toBeGreaterThan(2_000) // several batches of 1,000
    const before = await telemetry.stats()
    expect(before.paid_calls).toBe(1_500)
    const vouchers = rows.filter((r) => r.outcome === 'settled' && r.scheme === 'batch-settlement')
    expect(vouchers.length).toBeGreaterThan(200)
    expect(before.channels.calls).toBe(vouchers.length)
    expect(before.channels.revenue.atomic).toBe(
      vouchers.reduce((sum, r) => sum + BigInt(r.amount), 0n).toString(),
    )
    // Settlement intents: one decided before the cut (pruned), one still in doubt (kept).
    const ledger = store.ledger
    if (!ledger) throw new Error('the store has a settlement ledger')
    for (const key of ['pay:decided', 'pay:doubt']) {
      const intent = {
        key,
        network: BASE,
        amount: '1000',
        tool: 'hash',
        transport: 'http' as const,
      }
      await ledger.intend(
        { ...intent, createdAt: cutoff - DAY, expiresAt: cutoff - DAY, question: null },
        0,
      )
    }
    await ledger.decide('pay:decided', { outcome: 'settled', transaction: '0x1', at: cutoff - DAY })

    expect(await telemetry.prune()).toBe(old)
    expect(await fx.count('SELECT COUNT(*) FROM settlement_intents')).toBe(1)
    expect((await ledger.get('pay:doubt'))?.outcome).toBeNull()
    expect(await fx.count('SELECT COUNT(*) FROM payment_events')).toBe(rows.length - old)
    expect(await fx.count(`SELECT COUNT(*) FROM payment_events WHERE at < ${cutoff}`)).toBe(0)
    expect(await telemetry.stats()).toEqual(before)
    expect(await telemetry.prune()).toBe(0)
    const result = await expectNoDrift(fx.location, NOW)
    expect(result.prunedBefore).toBe(cutoff)
  })

  it('drops and counts events beyond the buffer bound', async () => {
    const telemetry = await start({ writeTimeoutMs: 300, retryIntervalMs: 50, bufferLimit: 5 })
    await fx.down('refuse')
    for (let i = 1; i <= 8; i++) {
      await telemetry.record({
        tool: 'hash',
        transport: 'mcp',
        network: SOLANA,
        amount: String(i),
        outcome: 'settled',
        payer: PAYER_B,
      })
    }
    expect(telemetry.health()).toMatchObject({ status: 'degraded', buffered: 5, dropped: 3 })
    await fx.up()
    await waitFor(() => telemetry.health().status === 'ok')
    expect(telemetry.health()).toMatchObject({ buffered: 0, dropped: 3 })
    const stats = await telemetry.stats()
    // The first five (1 + 2 + 3 + 4 + 5) were kept, the last three dropped.
    expect(stats.successful_paid_calls).toBe(5)
    expect(stats.revenue.lifetime).toEqual(m('15', '0.000015'))
  })

  it('starts degraded when the store is down at start, then migrates and flushes', async () => {
    await fx.down('refuse')
    const telemetry = await start({ writeTimeoutMs: 300, retryIntervalMs: 50 })
    expect(telemetry.health()).toMatchObject({ status: 'degraded', buffered: 0 })
    await telemetry.record({
      tool: 'base64',
      transport: 'http',
      network: BASE,
      amount: '7',
      outcome: 'settled',
    })
    await expect(telemetry.stats()).rejects.toBeInstanceOf(TelemetryUnavailableError)
    await fx.up()
    await waitFor(() => telemetry.health().status === 'ok')
    expect((await telemetry.stats()).tools).toEqual({ base64: { calls: 1 } })
  })

  it('flushes the buffer on close', async () => {
    // No retry before close: only close() can write the buffered events.
    const telemetry = await start({ writeTimeoutMs: 300, retryIntervalMs: 600_000 })
    await fx.down('refuse')
    for (const amount of ['1', '2', '3']) {
      await telemetry.record({
        tool: 'hmac',
        transport: 'http',
        network: BASE,
        amount,
        outcome: 'settled',
      })
    }
    expect(telemetry.health().buffered).toBe(3)
    await fx.up()
    await telemetry.close()
    expect(await fx.count('SELECT COUNT(*) FROM payment_events')).toBe(3)
    await expect(telemetry.stats()).rejects.toBeInstanceOf(TelemetryUnavailableError)
  })

  it('closes promptly against a hung store and logs the lost count', async () => {
    const errors: unknown[] = []
    vi.spyOn(logger, 'error').mockImplementation((...args: unknown[]) => {
      errors.push(args[0])
    })
    const telemetry = await start({ writeTimeoutMs: 300, retryIntervalMs: 600_000 })
    await fx.down('hang')
    for (const amount of ['1', '2']) {
      await telemetry.record({
        tool: 'hash',
        transport: 'http',
        network: BASE,
        amount,
        outcome: 'settled',
      })
    }
    // Closed while the store still hangs (it comes back only after the test): a close that waited
    // for it would time the test out.
    await telemetry.close()
    expect(errors).toContainEqual({ lost: 2 })
  })

  it('serves stats from a short cache and shares one in-flight query', async () => {
    let now = NOW
    const telemetry = await start({ cacheMs: 2_000, now: () => now })
    const settled: PaymentEvent = {
      tool: 'hash',
      transport: 'http',
      network: BASE,
      amount: '1000',
      outcome: 'settled',
    }
    await telemetry.record(settled)
    const first = await telemetry.stats()
    expect(first.window.cache_seconds).toBe(2)
    await telemetry.record(settled)
    now += 1_999
    expect(await telemetry.stats()).toBe(first)
    now += 1
    const [a, b] = await Promise.all([telemetry.stats(), telemetry.stats()])
    expect(a).toBe(b)
    expect(a.successful_paid_calls).toBe(2)
  })

  it('migrates idempotently and ignores a row written twice', async () => {
    const store = createTelemetryStore(fx.databaseUrl, { dataDir: fx.dataDir })
    try {
      await store.migrate()
      await store.migrate()
      const row: EventRow = {
        id: '0b8f1c36-5a1e-4d0b-9a55-3c8e2f0d9a11',
        at: NOW,
        tool: 'hash',
        transport: 'http',
        network: BASE,
        amount: '9223372036854775807',
        outcome: 'settled',
        scheme: 'batch-settlement',
        payerKey: null,
      }
      const other = { ...row, id: '5d7c9a0e-2b4f-4e8a-8c1d-7f6e5a4b3c21', amount: '0' }
      await store.insert([row])
      await store.insert([row, { ...other, scheme: 'exact' }])
      expect(await fx.count('SELECT COUNT(*) FROM payment_events')).toBe(2)
      expect(await fx.count('SELECT COUNT(*) FROM telemetry_schema_version')).toBe(4)
      // The row written twice counted once in the rollups too.
      expect(await fx.count(`SELECT calls FROM usage_totals WHERE metric = 'outcome'`)).toBe(2)
      const channelCalls = `SELECT calls FROM usage_totals
        WHERE metric = 'settled_scheme' AND item = 'batch-settlement'`
      expect(await fx.count(channelCalls)).toBe(1)
      // 2^63 - 1 has no exact double: the sum must come back through bigint, not a number.
      const rollups = await store.read(windowsAt(NOW))
      expect(rollups.outcomes.settled).toEqual({ calls: 2, atomic: 2n ** 63n - 1n })
      expect(rollups.hours).toEqual([{ hour: NOW / HOUR, calls: 2, atomic: 2n ** 63n - 1n }])
    } finally {
      await store.close()
    }
  })

  it('ignores invalid events without throwing', async () => {
    const telemetry = await start()
    const valid: PaymentEvent = {
      tool: 'hash',
      transport: 'http',
      network: BASE,
      amount: '1000',
      outcome: 'settled',
    }
    await telemetry.record({ ...valid, amount: '1.5' })
    await telemetry.record({ ...valid, amount: '-1' })
    await telemetry.record({ ...valid, tool: '' })
    await telemetry.record({ ...valid, outcome: 'refunded' as PaymentEvent['outcome'] })
    await telemetry.record({ ...valid, scheme: 'upto' as PaymentEvent['scheme'] })
    await telemetry.record(valid)
    expect((await telemetry.stats()).successful_paid_calls).toBe(1)
    expect((await telemetry.stats()).channels.calls).toBe(0)
    expect(telemetry.health()).toMatchObject({ status: 'ok', buffered: 0, dropped: 0 })
  })
})

describe('SQLite store worker thread', () => {
  const dirs: string[] = []
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('treats a worker that dies mid-write as an outage and counts the event once', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-worker-'))
    dirs.push(dir)
    const file = join(dir, 'telemetry.sqlite')
    const store = createSqliteStore(file, { writeTimeoutMs: 300 })
    const telemetry = await createTelemetry({
      store,
      salt: 'test-salt',
      now: () => NOW,
      cacheMs: 0,
      retryIntervalMs: 50,
      writeTimeoutMs: 300,
    })
    try {
      const event = (amount: string): PaymentEvent => ({
        tool: 'hash',
        transport: 'http',
        network: BASE,
        amount,
        outcome: 'settled',
        payer: PAYER_A,
      })
      await telemetry.record(event('1'))
      // The insert is posted to the worker before record() returns; the worker then dies.
      const pending = telemetry.record(event('2'))
      await store.terminateWorker()
      await pending // never rejects: telemetry never fails a paid call
      expect(telemetry.health()).toMatchObject({ status: 'degraded', buffered: 1 })
      await expect(telemetry.stats()).rejects.toBeInstanceOf(TelemetryUnavailableError)

      // The retry starts a new worker and flushes the buffer.
      await waitFor(() => telemetry.health().status === 'ok')
      const stats = await telemetry.stats()
      expect(stats.successful_paid_calls).toBe(2)
      expect(stats.revenue.lifetime).toEqual(m('3', '0.000003'))
      await expectNoDrift({ backend: 'sqlite', path: file }, NOW)
    } finally {
      await telemetry.close()
    }
  })

  it('keeps serving paid calls while a worker cannot open its file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-worker-'))
    dirs.push(dir)
    // A directory where the database file should be: every open fails (SQLITE_CANTOPEN).
    const file = join(dir, 'telemetry.sqlite')
    mkdirSync(file)
    const telemetry = await createTelemetry({
      store: createSqliteStore(file, { writeTimeoutMs: 300 }),
      salt: 'test-salt',
      retryIntervalMs: 50,
      writeTimeoutMs: 300,
    })
    try {
      expect(telemetry.health()).toMatchObject({ status: 'degraded' })
      // Straight to the buffer: buffered before record() even yields, no store call.
      const recorded = telemetry.record({
        tool: 'hash',
        transport: 'http',
        network: BASE,
        amount: '1',
        outcome: 'settled',
      })
      expect(telemetry.health().buffered).toBe(1)
      await recorded
      expect(telemetry.health()).toMatchObject({ status: 'degraded', buffered: 1 })
      await expect(telemetry.stats()).rejects.toBeInstanceOf(TelemetryUnavailableError)
      // The disk comes back: the retry migrates and flushes.
      rmSync(file, { recursive: true })
      await waitFor(() => telemetry.health().status === 'ok')
      expect((await telemetry.stats()).successful_paid_calls).toBe(1)
    } finally {
      await telemetry.close()
    }
  })
})
