import { describe, expect, it } from 'vitest'
import { mergeTotals, payerCounterDeltas, rollupDelta } from './rollup.js'
import type { EventRow, Outcome } from './types.js'

const HOUR = 3_600_000
let serial = 0
const row = (outcome: Outcome, at: number, more: Partial<EventRow> = {}): EventRow => ({
  id: `id-${serial++}`,
  at,
  tool: 'hash',
  transport: 'http',
  network: 'eip155:8453',
  amount: '1000',
  outcome,
  payerKey: 'p1',
  ...more,
})

describe('rollupDelta', () => {
  it('folds events into hourly rows, settled hours, totals and payers, each in key order', () => {
    const delta = rollupDelta([
      row('settled', 5 * HOUR + 1, { payerKey: 'p2', tool: 'pipeline', amount: '3000' }),
      row('verified', 5 * HOUR + 1, { payerKey: 'p2', tool: 'pipeline', amount: '3000' }),
      row('settled', 2 * HOUR),
      row('settled', 2 * HOUR + 10, { network: 'solana:x', transport: 'mcp' }),
      row('settled', 2 * HOUR + 20, { payerKey: null }),
      row('settle_failed', 2 * HOUR, { payerKey: 'p3' }),
    ])
    expect(delta.payers).toEqual([
      { payerKey: 'p1', calls: 2, firstAt: 2 * HOUR, lastAt: 2 * HOUR + 10 },
      { payerKey: 'p2', calls: 1, firstAt: 5 * HOUR + 1, lastAt: 5 * HOUR + 1 },
    ])
    expect(delta.hourly).toEqual([
      {
        outcome: 'settle_failed',
        hour: 2,
        network: 'eip155:8453',
        tool: 'hash',
        transport: 'http',
        calls: 1,
        amount: 1000n,
      },
      {
        outcome: 'settled',
        hour: 2,
        network: 'eip155:8453',
        tool: 'hash',
        transport: 'http',
        calls: 2,
        amount: 2000n,
      },
      {
        outcome: 'settled',
        hour: 2,
        network: 'solana:x',
        tool: 'hash',
        transport: 'mcp',
        calls: 1,
        amount: 1000n,
      },
      {
        outcome: 'settled',
        hour: 5,
        network: 'eip155:8453',
        tool: 'pipeline',
        transport: 'http',
        calls: 1,
        amount: 3000n,
      },
      {
        outcome: 'verified',
        hour: 5,
        network: 'eip155:8453',
        tool: 'pipeline',
        transport: 'http',
        calls: 1,
        amount: 3000n,
      },
    ])
    expect(delta.settledHours).toEqual([
      { hour: 2, calls: 3, amount: 3000n },
      { hour: 5, calls: 1, amount: 3000n },
    ])
    expect(delta.totals).toEqual([
      { metric: 'outcome', item: 'settle_failed', calls: 1, amount: 1000n },
      { metric: 'outcome', item: 'settled', calls: 4, amount: 6000n },
      { metric: 'outcome', item: 'verified', calls: 1, amount: 3000n },
      { metric: 'payers', item: 'settled_with_payer', calls: 3, amount: 0n },
      { metric: 'settled_network', item: 'eip155:8453', calls: 3, amount: 5000n },
      { metric: 'settled_network', item: 'solana:x', calls: 1, amount: 1000n },
      { metric: 'settled_tool', item: 'hash', calls: 3, amount: 3000n },
      { metric: 'settled_tool', item: 'pipeline', calls: 1, amount: 3000n },
    ])
  })

  it('changes nothing for no events', () => {
    expect(rollupDelta([])).toEqual({ payers: [], hourly: [], settledHours: [], totals: [] })
  })
})

describe('payerCounterDeltas', () => {
  const payer = (payerKey: string, calls: number) => ({ payerKey, calls, firstAt: 0, lastAt: 0 })

  it('counts 0 -> 1 as a new payer and 1 -> 2 as a new repeat payer, exactly once', () => {
    const deltas = payerCounterDeltas(
      [
        payer('new-once', 1),
        payer('new-twice', 2),
        payer('second', 1),
        payer('third', 1),
        payer('old', 3),
      ],
      new Map([
        ['new-once', 1], // 0 -> 1
        ['new-twice', 2], // 0 -> 2: new and repeat
        ['second', 2], // 1 -> 2: repeat
        ['third', 3], // 2 -> 3: nothing
        ['old', 7], // 4 -> 7: nothing
      ]),
    )
    expect(deltas).toEqual([
      { metric: 'payers', item: 'repeat', calls: 2, amount: 0n },
      { metric: 'payers', item: 'unique', calls: 2, amount: 0n },
    ])
  })

  it('returns nothing when no counter crosses, and fails on a missing count', () => {
    expect(payerCounterDeltas([payer('a', 1)], new Map([['a', 5]]))).toEqual([])
    expect(() => payerCounterDeltas([payer('a', 1)], new Map())).toThrow(
      'payer upsert returned no count',
    )
  })
})

describe('mergeTotals', () => {
  it('sums rows with the same key and sorts by key', () => {
    expect(
      mergeTotals(
        [{ metric: 'settled_tool', item: 'hash', calls: 1, amount: 5n }],
        [
          { metric: 'payers', item: 'unique', calls: 1, amount: 0n },
          { metric: 'settled_tool', item: 'hash', calls: 2, amount: 7n },
        ],
      ),
    ).toEqual([
      { metric: 'payers', item: 'unique', calls: 1, amount: 0n },
      { metric: 'settled_tool', item: 'hash', calls: 3, amount: 12n },
    ])
  })
})
