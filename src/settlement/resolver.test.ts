import { describe, expect, it } from 'vitest'
import { fakeJudge, labelOf, sqliteLedger } from '../../test/helpers/sqlite-ledger.js'
import { settlementEventId } from '../telemetry/event-row.js'
import type { LedgerIntent, SettlementLedger } from '../telemetry/ledger.js'
import type { PaymentEvent } from '../telemetry/types.js'
import { createSettlementResolver, UNRESOLVED_STALE_MS } from './resolver.js'
import type { SettlementVerdict } from './types.js'

const T0 = Date.UTC(2026, 10, 27, 12, 0)
const BASE = 'eip155:8453'
const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

/** An intent in doubt on `network`, its question naming `label`, held by its call until T0 + 1 s. */
async function intend(ledger: SettlementLedger, label: string, network = BASE, at = T0) {
  const intent: LedgerIntent = {
    key: `pay:${label}`,
    network,
    amount: '1000',
    tool: 'hash',
    transport: 'mcp',
    createdAt: at,
    expiresAt: at + 120_000,
    question: JSON.stringify({
      network,
      asset: '0xa',
      payTo: '0xb',
      amount: '1000',
      evm: { nonce: `0x${Buffer.from(label).toString('hex')}`, validBefore: 0 },
    }),
  }
  await ledger.intend(intent, at + 1_000)
}

function setup(verdicts: Record<string, SettlementVerdict>, clock = { now: T0 + 10_000 }) {
  const ledger = sqliteLedger()
  const events: PaymentEvent[] = []
  const { judge, asked } = fakeJudge(
    [BASE],
    (q) => verdicts[labelOf(q)] ?? { kind: 'undecided', why: 'scripted' },
  )
  const gauge: number[] = []
  const resolver = createSettlementResolver({
    ledger,
    judge,
    networks: [BASE, SOLANA],
    record: async (e) => {
      events.push(e)
    },
    onUnresolved: (n) => gauge.push(n),
    now: () => clock.now,
  })
  return { ledger, events, asked, gauge, resolver, clock, judge }
}

describe('settlement resolver', () => {
  it('decides landed and not_landed intents on chain, records each event once, leaves undecided ones', async () => {
    const fx = setup({
      a: { kind: 'landed', transaction: '0xa' },
      b: { kind: 'not_landed', reason: 'canceled' },
    })
    for (const label of ['a', 'b', 'c']) await intend(fx.ledger, label)
    expect(await fx.resolver.runOnce()).toEqual({
      landed: 1,
      notLanded: 1,
      undecided: 1,
      unresolved: 0,
    })
    expect(fx.events).toEqual([
      {
        tool: 'hash',
        transport: 'mcp',
        network: BASE,
        amount: '1000',
        outcome: 'settled',
        id: settlementEventId('pay:a', 'settled'),
      },
      {
        tool: 'hash',
        transport: 'mcp',
        network: BASE,
        amount: '1000',
        outcome: 'settle_failed',
        id: settlementEventId('pay:b', 'settle_failed'),
      },
    ])
    expect(await fx.ledger.get('pay:a')).toMatchObject({ outcome: 'landed', transaction: '0xa' })
    expect((await fx.ledger.get('pay:b'))?.outcome).toBe('not_landed')
    expect((await fx.ledger.get('pay:c'))?.outcome).toBeNull()
    // Later passes: the decided ones are never judged or counted again; the undecided one is
    // asked again once its claim has expired.
    await fx.resolver.runOnce()
    expect(fx.asked).toHaveLength(3)
    fx.clock.now += 30_000
    await fx.resolver.runOnce()
    expect(fx.asked.map(labelOf)).toEqual(['a', 'b', 'c', 'c'])
    expect(fx.events).toHaveLength(2)
  })

  it('decides an intent whose nonce another transfer of the payer used not_landed: settle_failed, counted once', async () => {
    const fx = setup({ u: { kind: 'not_landed', reason: 'nonce_used' } })
    await intend(fx.ledger, 'u')
    expect(await fx.resolver.runOnce()).toMatchObject({ landed: 0, notLanded: 1, undecided: 0 })
    expect(fx.events).toEqual([
      {
        tool: 'hash',
        transport: 'mcp',
        network: BASE,
        amount: '1000',
        outcome: 'settle_failed',
        id: settlementEventId('pay:u', 'settle_failed'),
      },
    ])
    expect(await fx.ledger.get('pay:u')).toMatchObject({ outcome: 'not_landed', transaction: null })
    fx.clock.now += 30_000
    await fx.resolver.runOnce()
    expect(fx.asked).toHaveLength(1)
    expect(fx.events).toHaveLength(1)
  })

  it('leaves an intent alone while its call holds it (its settle in flight)', async () => {
    const fx = setup({ a: { kind: 'landed', transaction: '0xa' } }, { now: T0 + 500 })
    await intend(fx.ledger, 'a')
    await fx.resolver.runOnce()
    expect(fx.asked).toHaveLength(0)
    fx.clock.now = T0 + 1_000
    await fx.resolver.runOnce()
    expect(fx.events.map((e) => e.outcome)).toEqual(['settled'])
  })

  it('gives each intent to one of two resolvers at once (one store, two instances)', async () => {
    const fx = setup({})
    const labels = Array.from({ length: 120 }, (_, i) => `k${i}`)
    for (const label of labels) await intend(fx.ledger, label)
    const other = createSettlementResolver({
      ledger: fx.ledger,
      judge: fx.judge,
      networks: [BASE],
      record: async () => {},
      now: () => fx.clock.now,
    })
    await Promise.all([fx.resolver.runOnce(), other.runOnce()])
    expect(fx.asked.map(labelOf).sort()).toEqual([...labels].sort())
  })

  it('records the event again under the same id when the decision was not written (a crash between)', async () => {
    const fx = setup({ a: { kind: 'landed', transaction: '0xa' } })
    await intend(fx.ledger, 'a')
    const decide = fx.ledger.decide
    fx.ledger.decide = async () => {
      throw new Error('killed')
    }
    await fx.resolver.runOnce()
    fx.ledger.decide = decide
    fx.clock.now += 30_000
    await fx.resolver.runOnce()
    expect(fx.events.map((e) => e.id)).toEqual([
      settlementEventId('pay:a', 'settled'),
      settlementEventId('pay:a', 'settled'),
    ])
    expect((await fx.ledger.get('pay:a'))?.outcome).toBe('landed')
  })

  it('reports the intents in doubt for longer than 5 minutes, those of rails without a judge included', async () => {
    const fx = setup({})
    await intend(fx.ledger, 's', SOLANA)
    await intend(fx.ledger, 'u', BASE)
    await fx.resolver.runOnce()
    fx.clock.now = T0 + UNRESOLVED_STALE_MS + 1
    await fx.resolver.runOnce()
    expect(fx.gauge).toEqual([0, 2])
    // Solana is not covered: never claimed nor judged.
    expect(fx.asked.map(labelOf)).toEqual(['u', 'u'])
  })

  it('runs once at start and then periodically, and stops', async () => {
    const fx = setup({ a: { kind: 'landed', transaction: '0xa' } })
    await intend(fx.ledger, 'a')
    const resolver = createSettlementResolver({
      ledger: fx.ledger,
      judge: fx.judge,
      networks: [BASE],
      record: async (e) => {
        fx.events.push(e)
      },
      intervalMs: 10,
      now: () => fx.clock.now,
    })
    resolver.start()
    await new Promise((r) => setTimeout(r, 50))
    await resolver.stop()
    expect(fx.events.map((e) => e.outcome)).toEqual(['settled'])
  })
})
