import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config.js'
import { MAX_TIMEOUT_SECONDS } from '../facilitators/link.js'
import {
  assertPaidCallBudget,
  worstIntentHoldMs,
  worstPaidCallMs,
  worstSettleMs,
} from './budget.js'

const bounds = (env: Record<string, string>) => {
  const c = loadConfig(env)
  return {
    facilitatorTimeoutMs: c.facilitatorTimeoutMs,
    settleTimeoutMs: c.facilitatorSettleTimeoutMs,
    workers: c.toolWorkers,
    queueLimit: c.toolQueueLimit,
    timeoutMs: c.toolTimeoutMs,
    maxTimeoutSeconds: MAX_TIMEOUT_SECONDS,
  }
}

describe('the paid-call budget', () => {
  it('gives a payment 120 s and a settlement 20 s by default: a slow mainnet settle fits', () => {
    expect(MAX_TIMEOUT_SECONDS).toBe(120)
    expect(loadConfig({}).facilitatorSettleTimeoutMs).toBe(20_000)
    expect(loadConfig({}).facilitatorTimeoutMs).toBe(4_000)
  })

  it('adds the waits for a checker thread and the input checks on both lanes, verify, the longest queue wait, the run, and one settle budget shared with its pending retry', () => {
    expect(
      worstPaidCallMs({
        facilitatorTimeoutMs: 5_000,
        settleTimeoutMs: 15_000,
        workers: 2,
        queueLimit: 4,
        timeoutMs: 2000,
      }),
    ).toBe(4 * 2000 + 5000 + 4000 + 2000 + 15_000)
    expect(
      worstPaidCallMs({
        facilitatorTimeoutMs: 1000,
        settleTimeoutMs: 3000,
        workers: 3,
        queueLimit: 7,
        timeoutMs: 500,
      }),
    ).toBe(4 * 500 + 1000 + 3 * 500 + 500 + 3000)
    // Redis: the read of the payment before the paid lane (2 × R), the two claims before verify
    // (2 × 2 × R) and the writes after settle (2 × R).
    expect(
      worstPaidCallMs({
        facilitatorTimeoutMs: 1000,
        settleTimeoutMs: 2000,
        workers: 1,
        queueLimit: 0,
        timeoutMs: 100,
        guardTimeoutMs: 50,
      }),
    ).toBe(4 * 100 + 300 + 1000 + 100 + 100 + 2000 + 100)
    expect(worstSettleMs({ settleTimeoutMs: 20_000, guardTimeoutMs: 500 })).toBe(21_000)
    // The settlement ledger: its intent before the settle and its outcome after, one write each.
    expect(
      worstSettleMs({ settleTimeoutMs: 20_000, guardTimeoutMs: 500, ledgerWriteMs: 2000 }),
    ).toBe(25_000)
  })

  it('accepts the defaults on any number of cores, with or without Redis', () => {
    for (const workers of ['1', '2', '3', '16', '256']) {
      expect(() => assertPaidCallBudget(bounds({ TOOL_WORKERS: workers }))).not.toThrow()
      expect(() =>
        assertPaidCallBudget({
          ...bounds({ TOOL_WORKERS: workers }),
          guardTimeoutMs: 500,
          ledgerWriteMs: 2000,
          facilitators: 2,
        }),
      ).not.toThrow()
      expect(() =>
        assertPaidCallBudget({ ...bounds({ TOOL_WORKERS: workers }), guardTimeoutMs: 500 }),
      ).not.toThrow()
    }
  })

  it('refuses a configuration whose worst case exceeds half the payment validity, naming the numbers', () => {
    expect(() =>
      assertPaidCallBudget(
        bounds({
          FACILITATOR_SETTLE_TIMEOUT_MS: '40000',
          FACILITATOR_TIMEOUT_MS: '6000',
          TOOL_WORKERS: '2',
          TOOL_QUEUE_LIMIT: '9',
        }),
      ),
    ).toThrow(
      'A paid call could outlive its payment: the input check on the free lane then the paid lane, ' +
        'each a wait for a checker thread and the check, 4 × TOOL_TIMEOUT_MS (8000) + verify ' +
        'FACILITATOR_TIMEOUT_MS (6000) + the wait for a worker ' +
        'max(1, ceil(TOOL_QUEUE_LIMIT 9 / TOOL_WORKERS 2)) × TOOL_TIMEOUT_MS 2000 (10000) + the run ' +
        'TOOL_TIMEOUT_MS (2000) + settle and its one pending retry FACILITATOR_SETTLE_TIMEOUT_MS (40000) ' +
        '= 66000 ms, more than half of the 120 s a payment stays valid (60000 ms). Lower ' +
        'FACILITATOR_SETTLE_TIMEOUT_MS, FACILITATOR_TIMEOUT_MS, TOOL_TIMEOUT_MS, TOOL_QUEUE_LIMIT or REDIS_TIMEOUT_MS, or raise TOOL_WORKERS.',
    )
    // Exactly half is accepted.
    expect(() =>
      assertPaidCallBudget(
        bounds({
          FACILITATOR_SETTLE_TIMEOUT_MS: '40000',
          FACILITATOR_TIMEOUT_MS: '6000',
          TOOL_WORKERS: '2',
          TOOL_QUEUE_LIMIT: '4',
        }),
      ),
    ).not.toThrow()
    expect(() =>
      assertPaidCallBudget({
        ...bounds({ FACILITATOR_SETTLE_TIMEOUT_MS: '40000', TOOL_WORKERS: '2' }),
        guardTimeoutMs: 1500,
      }),
    ).toThrow(
      /\+ the guard's read and claims 6 × REDIS_TIMEOUT_MS \(9000\) .* \+ the guard's writes after it 2 × REDIS_TIMEOUT_MS \(3000\) = 70000 ms/,
    )
  })
})

describe('the paid-call budget with several facilitators', () => {
  it('counts verify once per facilitator it may try, settle once with its pending retry', () => {
    expect(
      worstPaidCallMs({
        facilitatorTimeoutMs: 6000,
        settleTimeoutMs: 20_000,
        workers: 2,
        queueLimit: 4,
        timeoutMs: 2000,
        facilitators: 2,
      }),
    ).toBe(4 * 2000 + 2 * 6000 + 4000 + 2000 + 20_000)
    expect(() =>
      assertPaidCallBudget({
        ...bounds({
          TOOL_WORKERS: '2',
          FACILITATOR_TIMEOUT_MS: '10000',
          FACILITATOR_SETTLE_TIMEOUT_MS: '40000',
        }),
        facilitators: 2,
      }),
    ).toThrow(
      /verify on up to 2 facilitators 2 × FACILITATOR_TIMEOUT_MS \(20000\) .* or list fewer facilitators in FACILITATOR_URL\.$/,
    )
    // Two facilitators at the defaults fit, with the Redis guard.
    expect(() =>
      assertPaidCallBudget({
        ...bounds({ TOOL_WORKERS: '2' }),
        facilitators: 2,
        guardTimeoutMs: 500,
      }),
    ).not.toThrow()
  })
})

describe('the hold of a settlement ledger intent', () => {
  it('covers the wait for a worker, the run and the settle with its ledger and guard writes', () => {
    // Written as the run starts: 2 budgets of queue wait (4 calls queued on 2 workers), the
    // 2 s run, the 20 s settle, 2 × 0.5 s of guard writes, 2 × 2 s of ledger writes.
    expect(
      worstIntentHoldMs({
        workers: 2,
        queueLimit: 4,
        timeoutMs: 2_000,
        settleTimeoutMs: 20_000,
        guardTimeoutMs: 500,
        ledgerWriteMs: 2_000,
      }),
    ).toBe(4_000 + 2_000 + 20_000 + 1_000 + 4_000)
  })
})
