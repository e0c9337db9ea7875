import { randomBytes } from 'node:crypto'
import { mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Cluster, sharedEnv, startCluster } from '../src/devnet/cluster.js'
import type { ServiceInstance } from '../src/devnet/instance.js'
import { type PrivatePostgres, startPrivatePostgres } from '../src/devnet/postgres.js'
import { type PrivateRedis, pong, startPrivateRedis } from '../src/devnet/redis.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { catalog } from '../src/tools/catalog.js'
import { payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { type Ledger, quiescentLedger, readLedger, since } from './helpers/ledger.js'
import {
  type CallRecord,
  type CaseFigures,
  figures,
  figuresTable,
  runLoad,
} from './helpers/load.js'
import { payerKeys, type Rail } from './helpers/rails.js'
import { money } from './helpers/stats.js'

// Three instances of the service as separate processes behind Debian's nginx running the shipped
// deploy/nginx.conf, on a private PostgreSQL and a private Redis (the shared system servers are
// never stopped), paying on the devnet's two chains through the official client. Every case
// reconciles the client's view (200s and their PAYMENT-RESPONSE) with the chains (transfers to
// payTo) and with /stats asked of each instance directly.

const INSTANCES = 3
/** Payers per chain; each pays on both rails, so twice as many payer identities. */
const PAYERS = 4
/** Paid calls in flight at once. */
const CONCURRENCY = 24
const BASE = 'eip155:8453'

let stack: DevStack
let postgres: PrivatePostgres
let redis: PrivateRedis
let cluster: Cluster
/** Lines under the table: start-up times, the replay storm's answers. */
const notes: string[] = []
const table: CaseFigures[] = []

/**
 * Gaps between the chain and /stats per rail, in calls and atomic USDC, allowed so far. Zero
 * unless a SIGKILL landed between a settlement and its telemetry write (reported, never hidden).
 */
const allowedGap = { evm: { calls: 0, atomic: 0n }, solana: { calls: 0, atomic: 0n } }

beforeAll(async () => {
  const t0 = performance.now()
  const [s, pg, r] = await Promise.all([
    startDevStack({ payers: PAYERS }),
    (async () => {
      const started = performance.now()
      const server = await startPrivatePostgres()
      notes.push(
        `private PostgreSQL (initdb + start): ${Math.round(performance.now() - started)} ms`,
      )
      return server
    })(),
    startPrivateRedis(),
  ])
  stack = s
  postgres = pg
  redis = r
  const t1 = performance.now()
  cluster = await startCluster({
    instances: INSTANCES,
    env: {
      ...sharedEnv(stack, {
        databaseUrl: postgres.url,
        redisUrl: redis.url,
        salt: randomBytes(24).toString('base64url'),
      }),
      // The devnet facilitator shares this process's event loop with the load generator, on a
      // shared 2-core machine: at 96 calls in flight its answers passed the default 10 s and
      // some settled after the instance had answered 503 (see the overload it.todo below). Here
      // the margin keeps that hazard out of cases that test other faults. The Redis guard's
      // commands are timed from the instance's event loop, which lags under this load: at 250 ms
      // one call in 320 failed closed (guard_unavailable) with Redis up, and at 750 ms 7 in 320
      // under `stress-ng --cpu 2` (issue 19). The start-up budget check counts the input check, 6
      // guard commands and settle's pending retry: TOOL_TIMEOUT_MS 1 s (the catalogue examples
      // take milliseconds), REDIS_TIMEOUT_MS 1.5 s and FACILITATOR_TIMEOUT_MS 5 s fit exactly
      // (1 + 6 × 1.5 + 5 + 2 + 2 × 1 + 1 + 2 × 5 = 30 s, half of the payment's 60 s validity);
      // the devnet settles Base one transaction at a time in one round trip.
      TOOL_TIMEOUT_MS: '1000',
      FACILITATOR_TIMEOUT_MS: '5000',
      REDIS_TIMEOUT_MS: '1500',
      // A settlement once started: 10 s, the guard's writes (2 × 1.5 s) and the settlement
      // ledger's intent and outcome (2 × 2 s).
      FACILITATOR_SETTLE_TIMEOUT_MS: '10000',
      // A SIGTERM starts no settlement it could not finish: 17 s of it, the telemetry write (2 s)
      // and the reply (0.5 s) need 19.5 s. The default 30 s leaves the calls in flight 10.5 s to
      // reach their settlement under this load, or they would answer 503 shutting_down.
      SHUTDOWN_TIMEOUT_MS: '30000',
    },
    logLevel: 'warn',
  })
  notes.push(
    `dev stack, PostgreSQL, Redis: ${Math.round(t1 - t0)} ms; ${INSTANCES} instances + nginx: ${Math.round(performance.now() - t1)} ms`,
  )
}, 300_000)

afterAll(async () => {
  const markdown = [
    `Cluster figures: ${INSTANCES} instances behind nginx, ${PAYERS} payers per chain on both rails, ${CONCURRENCY} calls in flight, through the front.`,
    '',
    figuresTable(table),
    '',
    ...notes.map((t) => `- ${t}`),
    '',
  ].join('\n')
  mkdirSync('test-artifacts', { recursive: true })
  writeFileSync('test-artifacts/cluster-figures.md', markdown)
  process.stdout.write(`\n${markdown}\n`)
  await cluster?.stop()
  if (cluster && !process.env.KEEP_CLUSTER_LOGS)
    rmSync(cluster.dir, { recursive: true, force: true })
  await Promise.all([postgres?.destroy(), redis?.destroy()])
  await stack?.stop()
}, 120_000)

const network = (rail: Rail) => (rail === 'evm' ? BASE : stack.solana.network)
const sum = (values: bigint[]) => values.reduce((a, b) => a + b, 0n)
const tx = (r: CallRecord) =>
  r.rail === 'evm' ? r.settlement?.transaction.toLowerCase() : r.settlement?.transaction

/** What a load case found on chain beyond the 200s the clients received. */
interface Reconciled {
  /** Transfers on chain that no client got a 200 for, per rail. */
  settledWithout200: { evm: string[]; solana: string[] }
}

/**
 * The invariants of every case, from the client's records and the chain's transfers during the
 * case: every 200 carries a successful settlement whose transaction is on chain (no result
 * without settlement), transactions are distinct, and payTo rose by exactly the 200s' prices plus
 * whatever settled without a 200 (no failed call was charged).
 */
function reconcile(records: CallRecord[], window: Ledger): Reconciled {
  const oks = records.filter((r) => r.code === 'ok')
  for (const r of oks) {
    expect(r.status).toBe(200)
    expect(r.settlement).toMatchObject({ success: true, network: network(r.rail) })
    expect(r.settlement?.transaction).toMatch(/^\S{40,}$/)
  }
  const released = oks.map(tx)
  expect(new Set(released).size).toBe(oks.length)

  const onChain = {
    evm: new Set(window.evm.map((t) => t.transaction)),
    solana: new Set(window.solana.filter((t) => t.ok).map((t) => t.signature)),
  }
  // No Solana payment landed and failed (the fee payer would have paid for nothing).
  expect(window.solana.filter((t) => !t.ok)).toEqual([])
  const unsettled = oks.filter((r) => !onChain[r.rail].has(tx(r) as string))
  expect(unsettled).toEqual([])

  const releasedSet = new Set(released)
  const settledWithout200 = settledWithout200Of(records, window)
  const priceOf = (rail: Rail) => sum(oks.filter((r) => r.rail === rail).map((r) => r.price))
  const evmExtra = sum(
    window.evm.filter((t) => !releasedSet.has(t.transaction)).map((t) => t.value),
  )
  expect(window.balance.evm).toBe(priceOf('evm') + evmExtra)
  const solanaExtra = window.balance.solana - priceOf('solana')
  if (settledWithout200.solana.length === 0) expect(solanaExtra).toBe(0n)
  else expect(solanaExtra).toBeGreaterThan(0n)
  return { settledWithout200 }
}

/** Transfers on chain during `window` that no 200 of `records` carries, per rail. */
function settledWithout200Of(
  records: CallRecord[],
  window: Ledger,
): Reconciled['settledWithout200'] {
  const released = new Set(records.filter((r) => r.code === 'ok').map(tx))
  return {
    evm: window.evm.filter((t) => !released.has(t.transaction)).map((t) => t.transaction),
    solana: window.solana.filter((t) => t.ok && !released.has(t.signature)).map((t) => t.signature),
  }
}

/** GET a JSON body from `url`. */
async function getJson(url: string) {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) })
  return { status: res.status, body: await json(res) }
}

/**
 * Waits until every instance has flushed its telemetry and computed /stats after `since`
 * (past the 2 s cache), then returns the bodies, one per instance, asked of each directly.
 */
async function freshStats(after: number): Promise<Awaited<ReturnType<typeof json>>[]> {
  const deadline = Date.now() + 30_000
  for (;;) {
    const health = await Promise.all(cluster.instances.map((i) => getJson(`${i.url}/health`)))
    const flushed = health.every((h) => h.body.checks.telemetry.status === 'ok')
    const stats = flushed
      ? await Promise.all(cluster.instances.map((i) => getJson(`${i.url}/stats`)))
      : []
    if (
      flushed &&
      stats.every((s) => s.status === 200 && Date.parse(s.body.generated_at) > after)
    ) {
      return stats.map((s) => s.body)
    }
    if (Date.now() > deadline) throw new Error(`/stats not fresh: ${JSON.stringify(health)}`)
    await sleep(250)
  }
}

/**
 * No settled call is missing from /stats: after recovery, each instance answers the same
 * figures, and they equal the chains (transfer counts and payTo balances per rail), up to the
 * gap a SIGKILL is allowed to leave (`gapLimit` new unrecorded settlements per rail).
 */
async function expectStatsMatchChain(
  gapLimit = { evm: 0, solana: 0 },
): Promise<{ evm: number; solana: number }> {
  const checkedAt = Date.now()
  const ledger = await readLedger(stack)
  const bodies = await freshStats(checkedAt)
  const [first, ...others] = bodies.map(({ generated_at: _, ...rest }) => rest)
  for (const other of others) expect(other).toEqual(first)
  const stats = bodies[0]
  if (!stats) throw new Error('no instance answered /stats')

  const chain = {
    evm: { calls: ledger.evm.length, atomic: ledger.balance.evm },
    solana: { calls: ledger.solana.filter((t) => t.ok).length, atomic: ledger.balance.solana },
  }
  const recorded = (rail: Rail) => {
    const n = stats.networks[network(rail)] ?? { calls: 0, revenue: money(0n) }
    return { calls: n.calls as number, atomic: BigInt(n.revenue.atomic) }
  }
  const fresh = { evm: 0, solana: 0 }
  for (const rail of ['evm', 'solana'] as const) {
    const gap = {
      calls: chain[rail].calls - recorded(rail).calls,
      atomic: chain[rail].atomic - recorded(rail).atomic,
    }
    fresh[rail] = gap.calls - allowedGap[rail].calls
    expect(fresh[rail]).toBeGreaterThanOrEqual(0)
    expect(fresh[rail]).toBeLessThanOrEqual(gapLimit[rail])
    if (gap.calls === allowedGap[rail].calls) expect(gap.atomic).toBe(allowedGap[rail].atomic)
    allowedGap[rail] = gap
  }
  const totalCalls = recorded('evm').calls + recorded('solana').calls
  const totalAtomic = recorded('evm').atomic + recorded('solana').atomic
  expect(stats.successful_paid_calls).toBe(totalCalls)
  expect(stats.revenue.lifetime).toEqual(money(totalAtomic))
  expect(stats.paid_calls).toBeGreaterThanOrEqual(totalCalls)
  // Every payer paid on both rails; a payer's Base and Solana keys are two payers.
  expect(stats.unique_payers).toBe(2 * PAYERS)
  return fresh
}

/** A load case through the front with an optional fault injected while it runs. */
async function loadCase(
  name: string,
  load: { calls?: number; durationMs?: number },
  fault?: () => Promise<string | undefined>,
  options: { settledWithout200Allowed?: boolean } = {},
) {
  const before = await readLedger(stack)
  const running = runLoad({
    url: cluster.frontUrl,
    stack,
    payers: Array.from({ length: PAYERS }, (_, i) => i),
    tools: catalog,
    concurrency: CONCURRENCY,
    ...load,
  })
  const [run, note] = await Promise.all([running, fault?.()])
  const window = since(await quiescentLedger(stack), before)
  // The row first, so that a failing case still shows its figures.
  const unreleased = settledWithout200Of(run.records, window)
  const extra = unreleased.evm.length + unreleased.solana.length
  table.push(figures(name, run, { settledWithout200: extra, ...(note ? { note } : {}) }))
  const { settledWithout200 } = reconcile(run.records, window)
  if (!options.settledWithout200Allowed) expect(settledWithout200).toEqual({ evm: [], solana: [] })
  // A settlement without a 200 can only be a call the client saw fail.
  expect(extra).toBeLessThanOrEqual(run.records.filter((r) => r.code !== 'ok').length)
  return { run, settledWithout200 }
}

/**
 * The upstreams nginx tried for each request in its access log (`upstream=a, b` when it went on
 * to the next instance), from line `fromLine` on.
 */
function upstreamAttempts(fromLine = 0): string[][] {
  return cluster.nginx
    .accessLog()
    .split('\n')
    .slice(fromLine)
    .map((line) => /upstream=(.*?) upstream_status=/.exec(line)?.[1])
    .filter((list): list is string => list !== undefined)
    .map((list) => list.split(', '))
}

const accessLogLines = () => cluster.nginx.accessLog().split('\n').length - 1

/**
 * Refusals that charge nothing and may meet any case on a saturated machine: the instance's tool
 * pool full (503 `overloaded`, before verify, or past its queue deadline, unsettled). loadCase
 * still checks that none was charged.
 */
const REFUSED_UNCHARGED = ['overloaded']

/** Failures of a run other than `expected` and the uncharged refusals. */
const unexpected = (records: CallRecord[], expected: string[] = []) =>
  records.filter((r) => r.code !== 'ok' && ![...expected, ...REFUSED_UNCHARGED].includes(r.code))

/** Resolves after `ms` from the start of the load, the moment a fault is injected. */
const at = (ms: number) => sleep(ms)

const instance = (i: number) => cluster.instances[i] as ServiceInstance

/** Sets the note of the case just run (its row in the figures table). */
function note(text: string): void {
  const row = table.at(-1)
  if (row) row.note = text
}

describe(`cluster: ${INSTANCES} instances behind nginx, private PostgreSQL and Redis`, () => {
  it('settles 300+ concurrent paid calls from several payers on both rails through nginx; /stats equals the chains on every instance', async () => {
    const { run } = await loadCase('steady load', { calls: 320 })
    expect(run.records).toHaveLength(320)
    const oks = run.records.filter((r) => r.code === 'ok')
    expect(oks).toHaveLength(320)
    expect(new Set(oks.map((r) => r.rail))).toEqual(new Set(['evm', 'solana']))
    expect(new Set(oks.map((r) => `${r.rail}/${r.payer}`)).size).toBe(2 * PAYERS)
    // nginx spread the calls over every instance.
    const upstreams = new Set(upstreamAttempts().flat())
    for (const i of cluster.instances) expect(upstreams).toContain(`127.0.0.1:${i.port}`)
    await expectStatsMatchChain()
    // The front answers the same figures (whichever instance nginx picks).
    const front = await getJson(`${cluster.frontUrl}/stats`)
    expect(front.status).toBe(200)
  }, 120_000)

  describe('faults while load runs', () => {
    it('SIGKILL one instance: its in-flight calls fail without a result, nothing is released unsettled, every settlement reaches /stats or is reported', async () => {
      const victim = instance(0)
      const address = `127.0.0.1:${victim.port}`
      let fromLine = 0
      let restartMs = 0
      const { run, settledWithout200 } = await loadCase(
        'SIGKILL one instance',
        { durationMs: 8_000 },
        async () => {
          await at(1_500)
          fromLine = accessLogLines()
          const exited = victim.process()?.exited
          expect(victim.kill('SIGKILL')).toBe(true)
          expect(await exited).toEqual({ code: null, signal: 'SIGKILL' })
          // Back while the load still runs: nginx lets it in again after fail_timeout.
          const t = performance.now()
          await victim.start()
          restartMs = Math.round(performance.now() - t)
          return undefined
        },
        { settledWithout200Allowed: true },
      )
      // Calls cut by the kill surface as nginx's 502 envelope, never as a 200.
      expect(unexpected(run.records, ['upstream_failed'])).toEqual([])
      const missing = await expectStatsMatchChain({
        evm: settledWithout200.evm.length,
        solana: settledWithout200.solana.length,
      })
      // Requests nginx passed on after the dead instance refused the connection (nothing sent).
      const movedOn = upstreamAttempts(fromLine).filter(
        (tried) => tried.length > 1 && tried[0] === address,
      ).length
      note(
        `killed at 1.5 s; ${movedOn} requests moved on after a refused connect; restarted under load in ${restartMs} ms; settled without 200 missing from /stats: ${missing.evm + missing.solana}`,
      )
    }, 120_000)

    it('SIGTERM one instance: it drains and exits 0; nothing is charged without a result', async () => {
      const victim = instance(1)
      const address = `127.0.0.1:${victim.port}`
      let exit: unknown
      let exitMs = 0
      let fromLine = 0
      const { run } = await loadCase('SIGTERM one instance', { durationMs: 7_000 }, async () => {
        await at(1_500)
        fromLine = accessLogLines()
        const exited = victim.process()?.exited
        const t = performance.now()
        expect(victim.kill('SIGTERM')).toBe(true)
        exit = await exited
        exitMs = Math.round(performance.now() - t)
        return undefined
      })
      expect(exit).toEqual({ code: 0, signal: null })
      // A POST can meet an idle kept-alive connection at the moment the instance closes it: nginx
      // may not re-send it, so the client gets 502 (loadCase checked it was not charged).
      expect(unexpected(run.records, ['upstream_failed'])).toEqual([])
      // Today the instance keeps serving requests nginx sends on connections it already holds
      // (server.close() only stops new connections) until they idle for keepalive_timeout.
      const servedAfter = upstreamAttempts(fromLine).filter((tried) => tried.at(-1) === address)
      note(
        `SIGTERM at 1.5 s of 7 s of load; exit 0 ${exitMs} ms later; it served ${servedAfter.length} requests after SIGTERM on kept-alive connections`,
      )
      await victim.start()
      await expectStatsMatchChain()
    }, 120_000)

    it('PostgreSQL stopped for 5 s: paid calls go on, /stats answers 503, and every event is in /stats after', async () => {
      let during: { stats: number; code: unknown; health: unknown } | undefined
      const { run } = await loadCase('PostgreSQL down 5 s', { durationMs: 9_000 }, async () => {
        await at(1_500)
        await postgres.stop()
        await sleep(1_000)
        const stats = await getJson(`${instance(2).url}/stats`)
        const health = await getJson(`${instance(2).url}/health`)
        during = { stats: stats.status, code: stats.body.code, health: health.body.status }
        await sleep(4_000)
        await postgres.start()
        return 'stopped at 1.5 s (fast shutdown), started 5 s later'
      })
      expect(during).toEqual({ stats: 503, code: 'telemetry_unavailable', health: 'degraded' })
      expect(unexpected(run.records)).toEqual([])
      await expectStatsMatchChain()
    }, 120_000)

    it('Redis stopped for 5 s: paid calls fail closed with 503 guard_unavailable, nothing charged; free endpoints serve; paid calls resume', async () => {
      let during: { free: number; health: unknown; redis: unknown } | undefined
      const { run } = await loadCase('Redis down 5 s', { durationMs: 9_000 }, async () => {
        await at(1_500)
        await redis.stop()
        expect(await pong(redis.port)).toBe(false)
        await sleep(1_000)
        const free = await fetch(`${instance(2).url}/hash`, { method: 'POST', body: '{}' })
        const health = await getJson(`${instance(2).url}/health`)
        during = {
          free: free.status,
          health: health.body.status,
          redis: health.body.checks.redis.status,
        }
        await sleep(4_000)
        await redis.start()
        return 'stopped at 1.5 s, started (empty: no persistence) 5 s later'
      })
      expect(during).toEqual({ free: 402, health: 'degraded', redis: 'unavailable' })
      const failed = run.records.filter((r) => r.code !== 'ok')
      // Refused before verify: nothing settled without a 200 (loadCase checks the chain).
      expect(failed.map((r) => r.code)).toContain('guard_unavailable')
      expect(unexpected(run.records, ['guard_unavailable'])).toEqual([])
      for (const r of failed) expect(r.status).toBe(503)
      // After the outage, calls succeed again.
      const lastOk = Math.max(...run.records.filter((r) => r.code === 'ok').map((r) => r.end))
      const lastFailed = Math.max(...failed.map((r) => r.end))
      expect(lastOk).toBeGreaterThan(lastFailed)
      await expectStatsMatchChain()
    }, 120_000)
  })

  it('replay storm: one payment header sent 20 times to all 3 instances at once settles exactly once; its 200 and REPLAY_LIMIT replays, then duplicate_settlement', async () => {
    // The Redis guard lets one request claim the payment; the others answer 409
    // payment_in_progress (Retry-After: 1) while it runs, and replay it once it settled (the same
    // result and PAYMENT-RESPONSE, no second verify or settle), at most REPLAY_LIMIT (3) times,
    // counted in Redis whichever instance answers; every later one is 402 duplicate_settlement.
    for (const rail of ['evm', 'solana'] as const) {
      const before = await readLedger(stack)
      const facilitator = { ...stack.facilitatorRequests }
      const tool = catalog.find((t) => t.id === 'hash')
      if (!tool) throw new Error('no hash tool')
      const url = `${cluster.frontUrl}${tool.path}`
      const body = JSON.stringify({ input: `replay storm ${rail}` })
      const unpaid = await fetch(url, { method: 'POST', body })
      expect(unpaid.status).toBe(402)
      const http = new x402HTTPClient(await payerClient(payerKeys(stack, rail, 0), rail))
      const required = http.getPaymentRequiredResponse((name) => unpaid.headers.get(name))
      const headers = http.encodePaymentSignatureHeader(await http.createPaymentPayload(required))
      const send = async (i: number) => {
        const res = await fetch(`${instance(i % INSTANCES).url}${tool.path}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json', ...headers },
          body,
        })
        const receipt = res.headers.get('PAYMENT-RESPONSE')
        return {
          status: res.status,
          retryAfter: res.headers.get('Retry-After'),
          body: await json(res),
          transaction: receipt ? decodePaymentResponseHeader(receipt).transaction : undefined,
        }
      }
      const first = await Promise.all(Array.from({ length: 20 }, (_, i) => send(i)))
      const answers: Record<string, number> = {}
      for (const r of first) {
        const key = r.status === 200 ? '200' : `${r.status} ${r.body.code}`
        answers[key] = (answers[key] ?? 0) + 1
      }
      // Besides the 200 and the 409s, a loaded machine may refuse a request before verify with a
      // 503 that charges nothing and says when to retry (the guard's Redis command timed out, or
      // the worker queue is full).
      const retriable = (r: { status: number; body: { code?: string } }) =>
        (r.status === 409 && r.body.code === 'payment_in_progress') ||
        (r.status === 503 && ['guard_unavailable', 'overloaded'].includes(r.body.code ?? ''))
      for (const r of first.filter((r) => r.status !== 200)) {
        expect([r.status, r.body.code, retriable(r)]).toEqual([r.status, r.body.code, true])
        if (r.status === 409) expect(r.retryAfter).toBe('1')
      }
      // Each of them retried after Retry-After, as a client would, until it gets the replay.
      const responses = await Promise.all(
        first.map(async (r, i) => {
          let answer = r
          for (let tries = 0; retriable(answer) && tries < 30; tries++) {
            await sleep(Number(answer.retryAfter ?? 1) * 1_000)
            answer = await send(i)
          }
          return answer
        }),
      )
      const window = since(await quiescentLedger(stack, 1_000), before)
      notes.push(
        `replay storm on ${rail} (20 × one header, directly to ${INSTANCES} instances): first answers ${Object.entries(
          answers,
        )
          .map(([k, n]) => `${n} × ${k}`)
          .join(
            ', ',
          )}; after retrying them: ${responses.filter((r) => r.status === 200).length} × 200`,
      )
      const transfers = rail === 'evm' ? window.evm.length : window.solana.length
      expect(transfers).toBe(1)
      const settled = rail === 'evm' ? window.evm[0]?.transaction : window.solana[0]?.signature
      const served = responses.filter((r) => r.status === 200)
      expect(served).toHaveLength(4)
      for (const ok of served) {
        expect(rail === 'evm' ? ok.transaction?.toLowerCase() : ok.transaction).toBe(settled)
        expect(ok.body).toEqual(served[0]?.body)
      }
      for (const used of responses.filter((r) => r.status !== 200)) {
        expect([used.status, used.body.code]).toEqual([402, 'duplicate_settlement'])
      }
      expect(stack.facilitatorRequests.verify - facilitator.verify).toBe(1)
      expect(stack.facilitatorRequests.settle - facilitator.settle).toBe(1)
      expect(window.balance[rail]).toBe(BigInt(tool.price))
    }
    await expectStatsMatchChain()
  }, 90_000)

  it.todo(
    'SIGTERM under load with graceful shutdown (worker pool branch): in-flight paid calls finish with 200, new requests on its kept-alive sockets get 503 shutting_down (never charged), telemetry is flushed, and the instance exits 0 within SHUTDOWN_TIMEOUT_MS',
  )
  it.todo(
    'overload: a settle slower than FACILITATOR_TIMEOUT_MS (seen with the default 10 s at 96 calls in flight on this 2-core machine) must not charge without a result: today the instance answers 503 facilitator_unavailable while the facilitator goes on and settles on chain; with idempotent replays the client retrying the same payment must get the settled result, and /stats must count the settlement',
  )
})
