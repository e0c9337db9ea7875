import { describe, expect, it } from 'vitest'
import { createLifecycle } from './lifecycle.js'

describe('the lifecycle', () => {
  it('lets a settlement start during shutdown only if it can settle, record and reply in time', () => {
    let now = 1_000_000
    const lifecycle = createLifecycle({
      shutdownTimeoutMs: 15_000,
      settleMs: 10_000,
      now: () => now,
    })
    expect(lifecycle.shuttingDown()).toBe(false)
    expect(lifecycle.deadline()).toBeUndefined()
    expect(lifecycle.canSettle()).toBe(true)

    lifecycle.beginShutdown()
    expect(lifecycle.shuttingDown()).toBe(true)
    expect(lifecycle.deadline()).toBe(1_015_000)
    // 10 s settle + 2 s telemetry write + 0.5 s to reply must fit in the 15 s left.
    now += 2_500
    expect(lifecycle.canSettle()).toBe(true)
    now += 1
    expect(lifecycle.canSettle()).toBe(false)

    // A second signal keeps the first deadline.
    lifecycle.beginShutdown()
    expect(lifecycle.deadline()).toBe(1_015_000)
  })

  it('refuses a shutdown deadline that could never let a call in flight settle', () => {
    expect(() => createLifecycle({ shutdownTimeoutMs: 12_499, settleMs: 10_000 })).toThrow(
      "SHUTDOWN_TIMEOUT_MS (12499) leaves no time to finish a paid call in flight: its settlement (10000 ms: FACILITATOR_SETTLE_TIMEOUT_MS and the guard's writes), the telemetry write (2000) and the reply (500) need 12500 ms. Raise SHUTDOWN_TIMEOUT_MS or lower FACILITATOR_SETTLE_TIMEOUT_MS or REDIS_TIMEOUT_MS.",
    )
    expect(() => createLifecycle({ shutdownTimeoutMs: 12_500, settleMs: 10_000 })).not.toThrow()
  })
})
