import { afterAll, describe, expect, it } from 'vitest'
import { CheckTimeoutError, OverloadedError } from './errors.js'
import { createCheckLane } from './lane.js'
import { poolOptions } from './runner.js'

// A lane on real threads running the real worker module over the misbehaving tools of
// test/fixtures/runner-tools.ts: `slowcheck` holds its checker thread for `n` ms.

const catalog = new URL('../../test/fixtures/runner-tools.ts', import.meta.url)
const lane = createCheckLane({
  name: 'test',
  threads: 1,
  queueLimit: 1,
  budgetMs: 1500,
  queueMs: 300,
  nice: 0,
  retryAfterSeconds: 1,
  poolOptions: (threads) => poolOptions(threads, { catalog }),
})
afterAll(() => lane.close())

const slowCheck = (n: number) => ({
  kind: 'check' as const,
  tool: 'slowcheck',
  body: new TextEncoder().encode(JSON.stringify({ n })),
})
const outcome = (promise: Promise<unknown>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  )

describe('a checker lane', () => {
  it("never counts a thread's start in a task's queue deadline or budget", async () => {
    // Threads that load the worker module take far longer to start than these 50 ms.
    const cold = createCheckLane({
      name: 'cold',
      threads: 1,
      queueLimit: 1,
      budgetMs: 50,
      queueMs: 50,
      nice: 0,
      retryAfterSeconds: 1,
      poolOptions: (threads) => poolOptions(threads, { catalog }),
    })
    try {
      const started = performance.now()
      expect(await cold.run(slowCheck(0))).toBeInstanceOf(Uint8Array)
      expect(performance.now() - started).toBeGreaterThan(50)
    } finally {
      await cold.close()
    }
  })

  it('runs a task on its thread and brings its reply back', async () => {
    await lane.warm()
    expect(await lane.run(slowCheck(10))).toBeInstanceOf(Uint8Array)
  })

  it('stops a task that runs past its budget (input_check_timeout), refuses one that waited past its queue deadline (overloaded), and one beyond its queue (overloaded)', async () => {
    const running = outcome(lane.run(slowCheck(60_000)))
    const waiting = outcome(lane.run(slowCheck(10)))
    const beyond = outcome(lane.run(slowCheck(10)))
    expect(await beyond).toEqual({ error: new OverloadedError(1, 'admission') })
    const waited = (await waiting) as { error: OverloadedError }
    expect(waited.error).toBeInstanceOf(OverloadedError)
    expect(waited.error.stage).toBe('queue')
    const ran = (await running) as { error: CheckTimeoutError }
    expect(ran.error).toBeInstanceOf(CheckTimeoutError)
    expect(ran.error).toMatchObject({ code: 'input_check_timeout', budgetMs: 1500 })
    // The stopped thread is replaced: the lane serves the next task.
    expect(await lane.run(slowCheck(10))).toBeInstanceOf(Uint8Array)
    expect(lane.size()).toBe(0)
  }, 30_000)
})
