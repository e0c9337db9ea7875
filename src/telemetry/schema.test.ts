import { describe, expect, it } from 'vitest'
import { READ_SQL, readParams, readRollups, toPositional } from './schema.js'
import { windowsAt } from './windows.js'

describe('toPositional', () => {
  it('numbers each name once, in order of first use', () => {
    expect(toPositional('a > @x AND b <= @y OR c > @x', { x: 20, y: 30 })).toEqual({
      text: 'a > $1::bigint AND b <= $2::bigint OR c > $1::bigint',
      values: ['20', '30'],
    })
  })

  it('binds exactly the names the /stats read uses, and refuses a missing one', () => {
    const w = windowsAt(Date.UTC(2025, 5, 15, 12, 30))
    expect(toPositional(READ_SQL, readParams(w)).values).toEqual([
      String(w.weekFirstHour),
      String(w.hour),
    ])
    expect(() => toPositional('x = @missing', {})).toThrow('missing SQL parameter @missing')
  })
})

describe('readRollups', () => {
  it('reads bigint, numeric-string and number forms alike and sorts the lists', () => {
    const rollups = readRollups([
      {
        kind: 'total',
        metric: 'outcome',
        item: 'settled',
        calls: 3n,
        amount: '9223372036854775807',
      },
      { kind: 'total', metric: 'outcome', item: 'verified', calls: '4', amount: 0 },
      { kind: 'total', metric: 'settled_tool', item: 'pipeline', calls: 1, amount: 3000 },
      { kind: 'total', metric: 'settled_tool', item: 'hash', calls: 2, amount: 2000 },
      { kind: 'total', metric: 'settled_tool', item: 'hmac', calls: 0, amount: 0 },
      { kind: 'total', metric: 'settled_network', item: 'eip155:8453', calls: 3, amount: 5000 },
      { kind: 'total', metric: 'settled_scheme', item: 'exact', calls: '1', amount: '1000' },
      {
        kind: 'total',
        metric: 'settled_scheme',
        item: 'batch-settlement',
        calls: 2n,
        amount: 4000n,
      },
      { kind: 'total', metric: 'payers', item: 'unique', calls: 2, amount: 0 },
      { kind: 'total', metric: 'payers', item: 'repeat', calls: 1, amount: 0 },
      { kind: 'total', metric: 'payers', item: 'settled_with_payer', calls: 3, amount: 0 },
      { kind: 'hour', metric: 'settled', item: '486108', calls: '1', amount: '1000' },
      { kind: 'hour', metric: 'settled', item: '486100', calls: 2n, amount: 4000n },
    ])
    expect(rollups).toEqual({
      outcomes: {
        settled: { calls: 3, atomic: 2n ** 63n - 1n },
        verified: { calls: 4, atomic: 0n },
      },
      networks: [{ network: 'eip155:8453', calls: 3, atomic: 5000n }],
      tools: [
        { tool: 'hash', calls: 2, atomic: 2000n },
        { tool: 'pipeline', calls: 1, atomic: 3000n },
      ],
      schemes: [
        { scheme: 'batch-settlement', calls: 2, atomic: 4000n },
        { scheme: 'exact', calls: 1, atomic: 1000n },
      ],
      uniquePayers: 2,
      repeatPayers: 1,
      settledWithPayer: 3,
      hours: [
        { hour: 486100, calls: 2, atomic: 4000n },
        { hour: 486108, calls: 1, atomic: 1000n },
      ],
    })
  })
})
