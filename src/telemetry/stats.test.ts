import { describe, expect, it } from 'vitest'
import { buildStats } from './stats.js'
import type { Rollups } from './types.js'
import { windowsAt } from './windows.js'

const w = windowsAt(Date.UTC(2025, 5, 15, 12, 30))

/** Rollups with only the lifetime settled totals and the per-scheme rows set. */
function rollups(settled: { calls: number; atomic: bigint }, schemes: Rollups['schemes']): Rollups {
  return {
    outcomes: { settled, verified: { calls: settled.calls + 1, atomic: 0n } },
    networks: [],
    tools: [],
    schemes,
    uniquePayers: 0,
    repeatPayers: 0,
    settledWithPayer: 0,
    hours: [],
  }
}

describe('buildStats channels', () => {
  it('reports the settled calls and revenue of the batch-settlement scheme and their share', () => {
    const stats = buildStats(
      rollups({ calls: 8, atomic: 12_000n }, [
        { scheme: 'batch-settlement', calls: 6, atomic: 8_000n },
        { scheme: 'exact', calls: 2, atomic: 4_000n },
      ]),
      w,
      2,
    )
    expect(stats.channels).toEqual({
      calls: 6,
      revenue: { atomic: '8000', usdc: '0.008' },
      share_of_calls: 0.75,
    })
    // The channels' calls stay inside the totals, never added to them.
    expect(stats.successful_paid_calls).toBe(8)
    expect(stats.revenue.lifetime).toEqual({ atomic: '12000', usdc: '0.012' })
  })

  it('reports zeros, and a share of 0, without channel calls or without any settled call', () => {
    const zero = { calls: 0, revenue: { atomic: '0', usdc: '0' }, share_of_calls: 0 }
    const exactOnly = [{ scheme: 'exact', calls: 3, atomic: 3_000n }]
    expect(buildStats(rollups({ calls: 3, atomic: 3_000n }, exactOnly), w, 2).channels).toEqual(
      zero,
    )
    expect(buildStats(rollups({ calls: 0, atomic: 0n }, []), w, 2).channels).toEqual(zero)
  })
})
