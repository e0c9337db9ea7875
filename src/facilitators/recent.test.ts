import { describe, expect, it } from 'vitest'
import { createRecentOutcomes } from './recent.js'

describe('recent outcomes', () => {
  it('counts calls, failures and timeouts over the window, and forgets older ones', () => {
    let t = 1_000_000
    const recent = createRecentOutcomes({ windowMs: 60_000, buckets: 6, now: () => t })
    recent.record('ok')
    recent.record('failed')
    recent.record('timeout')
    expect(recent.counts()).toEqual({ windowSeconds: 60, calls: 3, failures: 2, timeouts: 1 })
    t += 30_000
    recent.record('ok')
    expect(recent.counts()).toEqual({ windowSeconds: 60, calls: 4, failures: 2, timeouts: 1 })
    // The first three fall out of the window; the fourth stays.
    t += 40_000
    expect(recent.counts()).toEqual({ windowSeconds: 60, calls: 1, failures: 0, timeouts: 0 })
    t += 60_000
    expect(recent.counts()).toEqual({ windowSeconds: 60, calls: 0, failures: 0, timeouts: 0 })
  })

  it('reuses its buckets: a bucket from a lap ago is not counted again', () => {
    let t = 0
    const recent = createRecentOutcomes({ windowMs: 10_000, buckets: 10, now: () => t })
    recent.record('failed')
    t = 10_000 // the same bucket index, one lap later
    recent.record('ok')
    expect(recent.counts()).toEqual({ windowSeconds: 10, calls: 1, failures: 0, timeouts: 0 })
  })
})
