import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { echoTool, fakeGate } from '../../test/helpers/fakes.js'
import { fakeJudge, fakeQuestionOf, labelOf } from '../../test/helpers/sqlite-ledger.js'
import { createTelemetry, type Telemetry } from '../telemetry/telemetry.js'
import type { ToolDefinition } from '../tools/types.js'
import { createSettlementResolver } from './resolver.js'

// The gate, the real SQLite telemetry store (its worker thread) and the resolver together, with
// a scripted facilitator and judge: settlements whose answers were lost and that the payers never
// retry are counted in /stats by the resolver, once, even when it runs twice or the payer's retry
// meets it.

const BASE = 'eip155:8453'
let dir: string
let telemetry: Telemetry

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'resolver-stats-'))
  telemetry = await createTelemetry({
    databaseUrl: join(dir, 'telemetry.sqlite'),
    dataDir: dir,
    salt: 'resolver-stats-salt',
    cacheMs: 0,
  })
})
afterAll(async () => {
  await telemetry.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('settlements in doubt in /stats', () => {
  it('counts the landed ones the payers never retried, once; not the ones that never land', async () => {
    const ledger = telemetry.ledger
    if (!ledger) throw new Error('the SQLite store has a ledger')
    // n1..n6 paid; the answers of n2..n6 are lost. On chain: n2, n3, n4 landed, n5 canceled,
    // n6 still undecided.
    const lost = new Set(['n2', 'n3', 'n4', 'n5', 'n6'])
    const chain: Record<string, 'landed' | 'canceled'> = {
      n2: 'landed',
      n3: 'landed',
      n4: 'landed',
      n5: 'canceled',
    }
    const { judge } = fakeJudge([BASE], (q) => {
      const fate = chain[labelOf(q)]
      if (fate === 'landed') return { kind: 'landed', transaction: `0x${labelOf(q)}` }
      if (fate === 'canceled') return { kind: 'not_landed', reason: 'canceled' }
      return { kind: 'undecided', why: 'pending' }
    })
    let clock = Date.now()
    const fx = fakeGate(
      {
        settle: async () => {
          throw new Error('Facilitator settle request timed out after 1000ms')
        },
      },
      undefined,
      { ledger, judge, questionOf: fakeQuestionOf, observer: (e) => telemetry.record(e) },
    )
    // n1 settles: a facilitator that answers for it.
    const settleOk = fakeGate({}, undefined, {
      ledger,
      judge,
      questionOf: fakeQuestionOf,
      observer: (e) => telemetry.record(e),
    })
    const call = (gate: typeof fx.gate, payment: unknown) =>
      gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'mcp',
        source: { body: new TextEncoder().encode('{"text":"a"}') },
        payment: { value: payment },
        resource: { url: 'http://svc/mcp' },
      })
    await call(settleOk.gate, await settleOk.pay(0, 'n1'))
    const payments = new Map<string, unknown>()
    for (const label of lost) {
      const payment = await fx.pay(0, label)
      payments.set(label, payment)
      await call(fx.gate, payment).catch(() => undefined)
    }
    expect((await telemetry.stats()).successful_paid_calls).toBe(1)

    // Two instances' resolvers at once, once the calls' holds have passed.
    clock += 120_000
    const resolver = () =>
      createSettlementResolver({
        ledger,
        judge,
        networks: [BASE],
        record: (e) => telemetry.record(e),
        now: () => clock,
      })
    await Promise.all([resolver().runOnce(), resolver().runOnce()])
    // The payer of n2 comes back after all: delivered, not counted again.
    const retried = await call(fx.gate, payments.get('n2'))
    expect(retried.settlement.transaction).toBe('0xn2')
    clock += 60_000
    await resolver().runOnce()

    const stats = await telemetry.stats()
    expect(stats.paid_calls).toBe(6)
    expect(stats.successful_paid_calls).toBe(4)
    expect(stats.revenue.lifetime.atomic).toBe('4000')
    expect(await ledger.unresolved(Number.MAX_SAFE_INTEGER)).toBe(1)
  })
})
