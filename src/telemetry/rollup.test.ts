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
        scheme: 'exact',
        calls: 1,
        amount: 1000n,
      },
      {
        outcome: 'settled',
        hour: 2,
        network: 'eip155:8453',
        tool: 'hash',
        transport: 'http',
        scheme: 'exact',
        calls: 2,
        amount: 2000n,
      },
      {
        outcome: 'settled',
        hour: 2,
        network: 'solana:x',
        tool: 'hash',
        transport: 'mcp',
        scheme: 'exact',
        calls: 1,
        amount: 1000n,
      },
      {
        outcome: 'settled',
        hour: 5,
        network: 'eip155:8453',
        tool: 'pipeline',
        transport: 'http',
        scheme: 'exact',
        calls: 1,
        amount: 3000n,
      },
      {
        outcome: 'verified',
        hour: 5,
        network: 'eip155:8453',
        tool: 'pipeline',
        transport: 'http',
        scheme: 'exact',
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
      { metric: 'settled_scheme', item: 'exact', calls: 4, amount: 6000n },
      { metric: 'settled_tool', item: 'hash', calls: 3, amount: 3000n },
      { metric: 'settled_tool', item: 'pipeline', calls: 1, amount: 3000n },
    ])
  })

  it('keys hourly rows by scheme and counts settled calls and revenue per scheme', () => {
    const voucher = { scheme: 'batch-settlement' } as const
    const delta = rollupDelta([
      // One hour, one network, tool and transport: two exact calls, three voucher calls.
      row('verified', 3 * HOUR, { ...voucher, amount: '1000' }),
      row('settled', 3 * HOUR, { ...voucher, amount: '1000' }),
      row('settled', 3 * HOUR + 1, { ...voucher, amount: '1000', payerKey: 'p2' }),
      row('settled', 3 * HOUR + 2, { ...voucher, tool: 'pipeline', amount: '3000' }),
      row('settled', 3 * HOUR + 3, { amount: '1000' }),
      row('settled', 3 * HOUR + 4, { scheme: 'exact', amount: '3000' }),
      // Neither counts: a voucher whose tool failed, an exact call whose settle failed.
      row('tool_failed_unsettled', 3 * HOUR, { ...voucher, amount: '1000' }),
      row('settle_failed', 3 * HOUR, { amount: '1000' }),
    ])
    const hourly = (
      outcome: Outcome,
      tool: string,
      scheme: string,
      calls: number,
      amount: bigint,
    ) => ({
      outcome,
      hour: 3,
      network: 'eip155:8453',
      tool,
      transport: 'http',
      scheme,
      calls,
      amount,
    })
    expect(delta.hourly).toEqual([
      hourly('settle_failed', 'hash', 'exact', 1, 1000n),
      hourly('settled', 'hash', 'batch-settlement', 2, 2000n),
      hourly('settled', 'hash', 'exact', 2, 4000n),
      hourly('settled', 'pipeline', 'batch-settlement', 1, 3000n),
      hourly('tool_failed_unsettled', 'hash', 'batch-settlement', 1, 1000n),
      hourly('verified', 'hash', 'batch-settlement', 1, 1000n),
    ])
    expect(delta.settledHours).toEqual([{ hour: 3, calls: 5, amount: 9000n }])
    expect(delta.totals.filter((t) => t.metric === 'settled_scheme')).toEqual([
      { metric: 'settled_scheme', item: 'batch-settlement', calls: 3, amount: 5000n },
      { metric: 'settled_scheme', item: 'exact', calls: 2, amount: 4000n },
    ])
    expect(delta.totals.find((t) => t.item === 'settled')).toEqual({
      metric: 'outcome',
      item: 'settled',
      calls: 5,
      amount: 9000n,
    })
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
