import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config.js'
import { assertPaidCallBudget, worstPaidCallMs } from './budget.js'
import { MAX_TIMEOUT_SECONDS } from './facilitator.js'

const bounds = (env: Record<string, string>) => {
  const c = loadConfig(env)
  return {
    facilitatorTimeoutMs: c.facilitatorTimeoutMs,
    workers: c.toolWorkers,
    queueLimit: c.toolQueueLimit,
    timeoutMs: c.toolTimeoutMs,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
  }
}

describe('the paid-call budget', () => {
  it('adds verify, the telemetry write, the longest queue wait, the run and settle', () => {
    expect(
      worstPaidCallMs({ facilitatorTimeoutMs: 10_000, workers: 2, queueLimit: 4, timeoutMs: 2000 }),
    ).toBe(28_000)
    expect(
      worstPaidCallMs({ facilitatorTimeoutMs: 1000, workers: 3, queueLimit: 7, timeoutMs: 500 }),
    ).toBe(1000 + 2000 + 3 * 500 + 500 + 1000)
  })

  it('accepts the defaults on any number of cores', () => {
    for (const workers of ['1', '2', '3', '16', '256']) {
      expect(() => assertPaidCallBudget(bounds({ TOOL_WORKERS: workers }))).not.toThrow()
    }
  })

  it('refuses a configuration whose worst case exceeds half the payment validity, naming the numbers', () => {
    expect(() =>
      assertPaidCallBudget(bounds({ TOOL_WORKERS: '2', TOOL_QUEUE_LIMIT: '8' })),
    ).toThrow(
      'A paid call could outlive its payment: verify and settle 2 × FACILITATOR_TIMEOUT_MS (20000) ' +
        '+ the telemetry write (2000) + the wait for a worker max(1, ceil(TOOL_QUEUE_LIMIT 8 / TOOL_WORKERS 2)) ' +
        '× TOOL_TIMEOUT_MS 2000 (8000) + the run TOOL_TIMEOUT_MS (2000) = 32000 ms, more than half of ' +
        'the 60 s a payment stays valid (30000 ms). Lower FACILITATOR_TIMEOUT_MS, TOOL_TIMEOUT_MS, ' +
        'TOOL_QUEUE_LIMIT or REDIS_TIMEOUT_MS, or raise TOOL_WORKERS.',
    )
    // The Redis guard's claims count: the defaults fit exactly, a slower Redis does not.
    expect(() =>
      assertPaidCallBudget({ ...bounds({ TOOL_WORKERS: '2' }), guardTimeoutMs: 500 }),
    ).not.toThrow()
    expect(() =>
      assertPaidCallBudget({ ...bounds({ TOOL_WORKERS: '2' }), guardTimeoutMs: 501 }),
    ).toThrow(
      /\+ the guard's claims 4 × REDIS_TIMEOUT_MS \(2004\) = 30004 ms, more than half of the 60 s/,
    )
    expect(() =>
      assertPaidCallBudget(bounds({ TOOL_TIMEOUT_MS: '5000', TOOL_WORKERS: '2' })),
    ).toThrow(/= 37000 ms, more than half/)
    // Exactly half is accepted.
    expect(() =>
      assertPaidCallBudget(bounds({ TOOL_WORKERS: '2', TOOL_QUEUE_LIMIT: '6' })),
    ).not.toThrow()
  })
})

describe('the paid-call budget with several facilitators', () => {
  it('counts verify once per facilitator it may try, settle once', () => {
    expect(
      worstPaidCallMs({
        facilitatorTimeoutMs: 6000,
        workers: 2,
        queueLimit: 4,
        timeoutMs: 2000,
        facilitators: 2,
      }),
    ).toBe(2 * 6000 + 2000 + 4000 + 2000 + 6000)
    expect(() =>
      assertPaidCallBudget({ ...bounds({ TOOL_WORKERS: '2' }), facilitators: 2 }),
    ).toThrow(
      'A paid call could outlive its payment: verify on up to 2 facilitators 2 × FACILITATOR_TIMEOUT_MS (20000) ' +
        '+ settle FACILITATOR_TIMEOUT_MS (10000) + the telemetry write (2000) + the wait for a worker ' +
        'max(1, ceil(TOOL_QUEUE_LIMIT 4 / TOOL_WORKERS 2)) × TOOL_TIMEOUT_MS 2000 (4000) + the run ' +
        'TOOL_TIMEOUT_MS (2000) = 38000 ms, more than half of the 60 s a payment stays valid (30000 ms). ' +
        'Lower FACILITATOR_TIMEOUT_MS, TOOL_TIMEOUT_MS, TOOL_QUEUE_LIMIT or REDIS_TIMEOUT_MS, or raise ' +
        'TOOL_WORKERS, or list fewer facilitators in FACILITATOR_URL.',
    )
    // Two facilitators at 6 s each fit, with the Redis guard.
    expect(() =>
      assertPaidCallBudget({
        ...bounds({ TOOL_WORKERS: '2', FACILITATOR_TIMEOUT_MS: '6000' }),
        facilitators: 2,
        guardTimeoutMs: 500,
      }),
    ).not.toThrow()
  })
})
