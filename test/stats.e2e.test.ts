import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { createTelemetry, type Telemetry } from '../src/telemetry/index.js'
import { DEFAULT_SQLITE_FILE } from '../src/telemetry/store.js'
import { findToolByPath } from '../src/tools/catalog.js'
import type { ToolDefinition } from '../src/tools/types.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { discardKeptStore, keepStore, keptSqliteDir } from './helpers/kept-stores.js'
import { PG_ADMIN_URL } from './helpers/pg-schema.js'
import { payerKeys, payToBalance as payToBalanceOn, type Rail } from './helpers/rails.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'
import { dailyEndingToday, money, NO_CHANNELS, WINDOW } from './helpers/stats.js'

// GET /stats end to end: real paid calls from two payers on both rails (anvil + litesvm, the
// official facilitator and the official @x402/fetch client), recorded by the real telemetry store,
// then the whole /stats object compared with figures worked out from the script of calls below.
// Both stores are kept for `npm run stats:check` (test/helpers/kept-stores.ts).

const BASE = 'eip155:8453'

/** One paid call of the script: who pays, on which rail, for which tool, and whether it settles. */
interface ScriptedCall {
  payer: 'A' | 'B'
  rail: Rail
  path: string
  /** A body the tool rejects after the payment was verified: counted as paid, never settled. */
  failingBody?: unknown
}

/**
 * Payer A pays three times: twice on Base (hash, pipeline) and once on Solana (base64). Payer B
 * pays once on Solana (json-validate), and its Base call fails in the tool (invalid Base64).
 * A's Base and Solana addresses are different keys, so they are two payers to telemetry.
 */
const SCRIPT: readonly ScriptedCall[] = [
  { payer: 'A', rail: 'evm', path: '/hash' },
  { payer: 'A', rail: 'solana', path: '/base64' },
  { payer: 'B', rail: 'solana', path: '/json-validate' },
  { payer: 'A', rail: 'evm', path: '/pipeline' },
  { payer: 'B', rail: 'evm', path: '/base64', failingBody: { mode: 'decode', input: 'ab*d' } },
]

const tool = (path: string) => findToolByPath(path) as ToolDefinition

/**
 * The /stats body the script must produce, worked out by hand from {@link SCRIPT}:
 * prices hash 1000, base64 1000, json-validate 1000, pipeline 3000 atomic units.
 */
function expectedStats(solanaNetwork: string, generatedAt: string) {
  return {
    paid_calls: 5,
    successful_paid_calls: 4,
    // A on Base, A on Solana, B on Solana; B's Base call never settled.
    unique_payers: 3,
    repeat_payers: 1,
    repeat_paid_calls: 1,
    repeat_call_rate: 0.25,
    revenue: { lifetime: money(6000n), last_24h: money(6000n), last_7d: money(6000n) },
    networks: {
      [BASE]: { calls: 2, revenue: money(4000n) },
      [solanaNetwork]: { calls: 2, revenue: money(2000n) },
    },
    tools: {
      hash: { calls: 1 },
      base64: { calls: 1 },
      'json-validate': { calls: 1 },
      pipeline: { calls: 1 },
    },
    // Every call paid with `exact`: none through a prepaid channel.
    channels: NO_CHANNELS,
    daily: dailyEndingToday(generatedAt, 4, 6000n),
    generated_at: generatedAt,
    window: WINDOW,
  }
}

/** A telemetry backend under test: how to open it and how to keep it for `stats:check`. */
interface Backend {
  open(): Promise<Telemetry>
  /** Called once telemetry is closed (every event flushed). */
  keep(): void
}

function sqliteBackend(): Backend {
  const name = 'stats-e2e-sqlite'
  let dataDir = ''
  return {
    async open() {
      await discardKeptStore(name)
      dataDir = keptSqliteDir(name)
      return createTelemetry({ dataDir, salt: 'stats-e2e-salt' })
    },
    keep: () => keepStore({ name, backend: 'sqlite', path: join(dataDir, DEFAULT_SQLITE_FILE) }),
  }
}

function postgresBackend(): Backend {
  const name = 'stats-e2e-postgres'
  const schema = `stats_e2e_${randomBytes(6).toString('hex')}`
  const url = `${PG_ADMIN_URL}?options=${encodeURIComponent(`-c search_path=${schema}`)}`
  const dataDir = mkdtempSync(join(tmpdir(), 'stats-e2e-'))
  return {
    async open() {
      await discardKeptStore(name)
      const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
      await admin.connect()
      try {
        await admin.query(`CREATE SCHEMA ${schema}`)
      } finally {
        await admin.end()
      }
      return createTelemetry({ databaseUrl: url, dataDir, salt: 'stats-e2e-salt' })
    },
    keep() {
      rmSync(dataDir, { recursive: true, force: true })
      keepStore({ name, backend: 'postgres', url, schema })
    },
  }
}

let stack: DevStack

beforeAll(async () => {
  stack = await sharedDevStack()
})
afterAll(async () => {})

describe.each([
  ['SQLite', sqliteBackend],
  ['PostgreSQL', postgresBackend],
] as const)('GET /stats after scripted paid calls, telemetry on %s', (_name, makeBackend) => {
  let backend: Backend
  let telemetry: Telemetry
  let svc: RunningService

  beforeAll(async () => {
    backend = makeBackend()
    telemetry = await backend.open()
    svc = await startService(stack, {}, { telemetry })
  })
  afterAll(async () => {
    await svc?.stop()
    await telemetry?.close()
    backend?.keep()
  })

  const keys = (payer: 'A' | 'B', rail: Rail) => payerKeys(stack, rail, payer === 'A' ? 0 : 1)
  const payToBalance = (rail: Rail) => payToBalanceOn(stack, rail)

  it('shows exactly the figures of the calls made', async () => {
    for (const call of SCRIPT) {
      const before = await payToBalance(call.rail)
      const pay = await paidFetch(keys(call.payer, call.rail), call.rail)
      const res = await pay(`${svc.baseUrl}${call.path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(call.failingBody ?? tool(call.path).examples[0]),
      })
      const charged = (await payToBalance(call.rail)) - before
      if (call.failingBody) {
        expect(res.status).toBe(400)
        expect((await json(res)).code).toBe('invalid_base64')
        expect(charged).toBe(0n)
      } else {
        expect(res.status).toBe(200)
        expect(charged).toBe(BigInt(tool(call.path).price))
      }
    }

    const before = Date.now()
    const res = await fetch(`${svc.baseUrl}/stats`)
    const after = Date.now()
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/json')
    const body = await json(res)
    const generatedAt = Date.parse(body.generated_at)
    expect(generatedAt).toBeGreaterThanOrEqual(before)
    expect(generatedAt).toBeLessThanOrEqual(after)
    expect(body).toEqual(expectedStats(stack.solana.network, body.generated_at))

    // Aggregates only: no payer address, in any spelling, appears in the body.
    const text = JSON.stringify(body).toLowerCase()
    const addresses = [
      ...stack.evm.payers.map((p) => p.address),
      ...stack.solana.payers.map((p) => p.address),
    ]
    for (const address of addresses) expect(text).not.toContain(address.toLowerCase())
  })
})
