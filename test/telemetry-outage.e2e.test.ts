import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { createTelemetry, createTelemetryStore, type Telemetry } from '../src/telemetry/index.js'
import { findToolByPath } from '../src/tools/catalog.js'
import type { ToolDefinition } from '../src/tools/types.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { discardKeptStore, keepStore } from './helpers/kept-stores.js'
import { PG_ADMIN_URL } from './helpers/pg-schema.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'
import { dailyEndingToday, money, NO_CHANNELS, WINDOW } from './helpers/stats.js'

// The telemetry store dies mid-run for real: the service reaches PostgreSQL through a TCP proxy,
// and the proxy closes its listener and every open connection (as a crashed or restarted database
// would). Paid calls must keep working, /stats must say 503, /health must say degraded, and once
// the database is back every buffered event must be in the figures. The store is kept for
// `npm run stats:check` (test/helpers/kept-stores.ts): its rollups went through the outage.

const BASE = 'eip155:8453'

/** A TCP proxy to PostgreSQL that can refuse every connection (database down) and come back. */
async function createProxy(targetPort: number) {
  const sockets = new Set<Socket>()
  const onConnection = (client: Socket) => {
    const upstream = tcpConnect(targetPort, '127.0.0.1')
    for (const socket of [client, upstream]) {
      sockets.add(socket)
      socket.on('error', () => {})
      socket.on('close', () => sockets.delete(socket))
    }
    client.on('close', () => upstream.destroy())
    upstream.on('close', () => client.destroy())
    client.pipe(upstream)
    upstream.pipe(client)
  }
  let server: Server | undefined
  const listen = (port: number) =>
    new Promise<Server>((resolve) => {
      const s = createServer(onConnection)
      s.listen(port, '127.0.0.1', () => resolve(s))
    })
  server = await listen(0)
  const address = server.address()
  const port = typeof address === 'object' && address ? address.port : 0
  const close = async () => {
    for (const socket of sockets) socket.destroy()
    const s = server
    server = undefined
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()))
  }
  return {
    port,
    /** The database is gone: open connections reset, new ones refused. */
    kill: close,
    async revive() {
      server ??= await listen(port)
    },
    close,
  }
}

let stack: DevStack
let proxy: Awaited<ReturnType<typeof createProxy>>
let admin: pg.Client
let telemetry: Telemetry
let svc: RunningService
const schema = `outage_e2e_${randomBytes(6).toString('hex')}`
const dataDir = mkdtempSync(join(tmpdir(), 'outage-e2e-'))
const KEPT_NAME = 'telemetry-outage-e2e-postgres'

beforeAll(async () => {
  await discardKeptStore(KEPT_NAME)
  stack = await sharedDevStack()
  admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE SCHEMA ${schema}`)
  proxy = await createProxy(5432)
  const options = encodeURIComponent(`-c search_path=${schema}`)
  const databaseUrl = `postgres://postgres@127.0.0.1:${proxy.port}/test?options=${options}`
  // The outage here is the proxy's: refused and reset connections, which fail at once. The store's
  // own bounds (2 s a write, 5 s a read) are generous bounds on a hang instead, so that a loaded
  // machine's slow query is not a second, unplanned outage (a 503 from /stats before the kill).
  const bounds = { writeTimeoutMs: 60_000, readTimeoutMs: 60_000 }
  telemetry = await createTelemetry({
    store: createTelemetryStore(databaseUrl, { dataDir, ...bounds }),
    writeTimeoutMs: bounds.writeTimeoutMs,
    dataDir,
    salt: 'outage-e2e-salt',
  })
  svc = await startService(stack, {}, { telemetry })
})
afterAll(async () => {
  await svc?.stop()
  await telemetry?.close()
  await proxy?.close()
  await admin?.end()
  keepStore({
    name: KEPT_NAME,
    backend: 'postgres',
    url: `${PG_ADMIN_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`,
    schema,
  })
  rmSync(dataDir, { recursive: true, force: true })
})

const tool = (path: string) => findToolByPath(path) as ToolDefinition

/**
 * Pays for `path` with its catalogue example; asserts 200 and that payTo received the price.
 * Payer A (index 0) pays on Base, payer B (index 1) on Solana.
 */
async function paidCall(rail: Rail, path: string): Promise<void> {
  const balance = () => payToBalance(stack, rail)
  const before = await balance()
  const pay = await paidFetch(payerKeys(stack, rail, rail === 'evm' ? 0 : 1), rail)
  const res = await pay(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(tool(path).examples[0]),
  })
  expect(res.status).toBe(200)
  expect((await json(res)).ok).toBe(true)
  expect((await balance()) - before).toBe(BigInt(tool(path).price))
}

const getJson = async (path: string) => {
  const res = await fetch(`${svc.baseUrl}${path}`)
  return { status: res.status, headers: res.headers, body: await json(res) }
}

async function until(check: () => Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

describe('telemetry store outage on the devnet', () => {
  it('keeps paid calls working, answers /stats 503 while down, and loses no event', async () => {
    // Store up: one settled call on Base by payer A.
    await paidCall('evm', '/hash')
    const up = await getJson('/stats')
    expect(up.status).toBe(200)
    expect(up.body.successful_paid_calls).toBe(1)

    await proxy.kill()

    // Store down: a second call by A on Base, and a first by B on Solana, both paid and answered.
    await paidCall('evm', '/pipeline')
    await paidCall('solana', '/hash')

    const down = await getJson('/stats')
    expect(down.status).toBe(503)
    expect(down.headers.get('retry-after')).toBe('5')
    expect(down.body).toEqual({
      ok: false,
      code: 'telemetry_unavailable',
      error: 'telemetry storage is temporarily unavailable',
      request_id: down.headers.get('x-request-id'),
    })
    const health = await getJson('/health')
    expect(health.status).toBe(200)
    expect(health.body.status).toBe('degraded')
    expect(health.body.reasons).toContain('telemetry storage is degraded')
    // Two calls, a `verified` and a `settled` event each, wait in memory.
    expect(health.body.checks.telemetry).toEqual({
      status: 'degraded',
      backend: 'postgres',
      buffered: 4,
      dropped: 0,
      salt: 'configured',
    })
    // The landing page renders its unavailable state rather than zeros.
    const page = await (await fetch(`${svc.baseUrl}/`)).text()
    expect(page).toContain('data-state="unavailable"')

    await proxy.revive()
    const revivedAt = Date.now()
    await until(async () => (await getJson('/health')).body.checks.telemetry.status === 'ok')
    expect((await getJson('/health')).body.checks.telemetry).toEqual({
      status: 'ok',
      backend: 'postgres',
      buffered: 0,
      dropped: 0,
      salt: 'configured',
    })

    // Figures computed after the recovery (the cache may still hold the pre-outage ones).
    let after = await getJson('/stats')
    await until(async () => {
      after = await getJson('/stats')
      return after.status === 200 && Date.parse(after.body.generated_at) >= revivedAt
    })
    // A paid hash (1000) and pipeline (3000) on Base, B paid hash (1000) on Solana.
    expect(after.body).toEqual({
      paid_calls: 3,
      successful_paid_calls: 3,
      unique_payers: 2,
      repeat_payers: 1,
      repeat_paid_calls: 1,
      repeat_call_rate: 1 / 3,
      revenue: { lifetime: money(5000n), last_24h: money(5000n), last_7d: money(5000n) },
      networks: {
        [BASE]: { calls: 2, revenue: money(4000n) },
        [stack.solana.network]: { calls: 1, revenue: money(1000n) },
      },
      tools: { hash: { calls: 2 }, pipeline: { calls: 1 } },
      channels: NO_CHANNELS,
      daily: dailyEndingToday(after.body.generated_at, 3, 5000n),
      generated_at: after.body.generated_at,
      window: WINDOW,
    })
    // And in the database itself: six rows, each payment event exactly once.
    const { rows } = await admin.query(
      `SELECT outcome, count(*)::int AS n FROM ${schema}.payment_events GROUP BY outcome ORDER BY outcome`,
    )
    expect(rows).toEqual([
      { outcome: 'settled', n: 3 },
      { outcome: 'verified', n: 3 },
    ])
  })
})
