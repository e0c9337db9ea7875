import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { logger } from '../logger.js'
import { catalog } from '../tools/catalog.js'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import { OverloadedError, ToolTimeoutError } from './errors.js'
import { createToolRunner, type ToolRunner, worstQueueWaitMs } from './runner.js'

// Real worker threads. `fixtures` runs the misbehaving tools of test/fixtures/runner-tools.ts
// through the real worker module; `tools` runs the real catalogue.

const fixtureCatalog = new URL('../../test/fixtures/runner-tools.ts', import.meta.url)
const fixture = (id: string) => ({ id }) as ToolDefinition
const tool = (id: string) => catalog.find((t) => t.id === id) as ToolDefinition

let fixtures: ToolRunner
let tools: ToolRunner

beforeAll(async () => {
  // Budgets of seconds, not milliseconds: a loaded machine may delay a worker or a timer by
  // hundreds of milliseconds, and the sleeps below must fit in their budget all the same.
  fixtures = createToolRunner({
    workers: 1,
    timeoutMs: 2000,
    queueLimit: 1,
    catalog: fixtureCatalog,
  })
  tools = createToolRunner({ workers: 1, timeoutMs: 2000, queueLimit: 2 })
  await Promise.all([fixtures.warm(), tools.warm()])
})
afterAll(async () => {
  await Promise.all([fixtures?.close(), tools?.close()])
})
afterEach(() => {
  vi.restoreAllMocks()
})

/** Admits and runs one call. */
const run = async (runner: ToolRunner, t: ToolDefinition, input: unknown, now = 0) =>
  (await runner.admit().run(t, input, now)).value()

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    () => undefined,
    (e: unknown) => e,
  )

describe('the tool runner', () => {
  it('runs a catalogue tool on a worker and returns its result', async () => {
    const hash = tool('hash')
    const input = hash.input.parse({ input: 'abc' })
    expect(await run(tools, hash, input)).toEqual(hash.run(input, { nowSeconds: () => 0 }))
    expect(tools.status()).toEqual({ running: 0, queued: 0, capacity: 3 })
  })

  it('passes the clock read on the main thread into the worker', async () => {
    expect(await run(fixtures, fixture('clock'), {}, 1_700_000_000)).toEqual({ now: 1_700_000_000 })
  })

  it("brings a ToolError back as a ToolError with the tool's code, message and details", async () => {
    const base64 = tool('base64')
    const input = base64.input.parse({ mode: 'decode', input: 'ab*d' })
    let inline: unknown
    try {
      base64.run(input, { nowSeconds: () => 0 })
    } catch (error) {
      inline = error
    }
    const error = await rejection(run(tools, base64, input))
    expect(error).toBeInstanceOf(ToolError)
    expect(error).toEqual(inline)
    expect({ ...(error as ToolError) }).toEqual({ ...(inline as ToolError) })
    expect((error as ToolError).message).toBe((inline as ToolError).message)

    const refused = await rejection(run(fixtures, fixture('refuse'), {}))
    expect(refused).toBeInstanceOf(ToolError)
    expect(refused).toMatchObject({
      code: 'invalid_hex',
      message: 'odd number of digits',
      details: { offset: 3, field: '/input' },
    })
  })

  it('turns any other error into tool_failed, logged by its name only', async () => {
    const log = vi.spyOn(logger, 'error').mockImplementation(() => undefined)
    const error = await rejection(run(fixtures, fixture('range'), {}))
    expect(error).toBeInstanceOf(ToolError)
    expect(error).toMatchObject({
      code: 'tool_failed',
      message: 'The tool failed on this input; nothing was charged',
    })
    expect(log.mock.calls).toEqual([
      [{ tool: 'range', err: 'RangeError' }, 'tool threw an unexpected error'],
    ])
  })

  it('turns a worker that dies into tool_failed and keeps serving', async () => {
    vi.spyOn(logger, 'error').mockImplementation(() => undefined)
    const error = await rejection(run(fixtures, fixture('exit'), {}))
    expect(error).toMatchObject({ code: 'tool_failed' })
    expect(await run(fixtures, fixture('echo'), { n: 1 })).toEqual({ input: { n: 1 } })
  })

  it('stops a call at its budget with ToolTimeoutError, replaces the worker, serves the next', async () => {
    const started = performance.now()
    const error = await rejection(run(fixtures, fixture('spin'), {}))
    expect(error).toBeInstanceOf(ToolTimeoutError)
    expect(error).toMatchObject({
      code: 'tool_timeout',
      budgetMs: 2000,
      message:
        'The tool did not finish within its 2000 ms budget and was stopped; nothing was charged',
    })
    expect(performance.now() - started).toBeGreaterThanOrEqual(1990)
    expect(await run(fixtures, fixture('echo'), { n: 2 })).toEqual({ input: { n: 2 } })
    expect(fixtures.status()).toEqual({ running: 0, queued: 0, capacity: 2 })
  })

  it('admits a call only while fewer than workers + queue limit calls run or wait', async () => {
    // One worker: the second call waits in the queue while the first sleeps.
    const sleeping = fixtures
      .admit()
      .run(fixture('sleep'), { n: 200 }, 0)
      .then((r) => r.value())
    const queued = fixtures
      .admit()
      .run(fixture('echo'), { n: 3 }, 0)
      .then((r) => r.value())
    expect(fixtures.status()).toEqual({ running: 1, queued: 1, capacity: 2 })
    const refused = (() => {
      try {
        fixtures.admit()
      } catch (error) {
        return error
      }
    })()
    expect(refused).toBeInstanceOf(OverloadedError)
    expect(refused).toMatchObject({ code: 'overloaded', retryAfterSeconds: 2, stage: 'admission' })
    expect(await sleeping).toEqual({ slept: 200 })
    expect(await queued).toEqual({ input: { n: 3 } })
    expect(fixtures.status()).toEqual({ running: 0, queued: 0, capacity: 2 })
  })

  it('refuses a queued call at its deadline when many were admitted at once, and never runs it', async () => {
    // Admission reserves nothing (a paid call verifies its payment in between): three calls
    // admitted together all queue. Deadline max(1, ceil(1 / 1)) × 2000 = 2000 ms: the first sleeps
    // 0-1250 ms, the second 1250-2500 ms (no sooner on any machine), so the third is still waiting
    // at 2000 ms; each sleep has 750 ms of its budget to spare for a loaded machine.
    const runner = createToolRunner({
      workers: 1,
      timeoutMs: 2000,
      queueLimit: 1,
      catalog: fixtureCatalog,
    })
    try {
      await runner.warm()
      const [a, b, c] = [runner.admit(), runner.admit(), runner.admit()]
      const results = await Promise.allSettled([
        a.run(fixture('sleep'), { n: 1250 }, 0).then((r) => r.value()),
        b.run(fixture('sleep'), { n: 1250 }, 0).then((r) => r.value()),
        c.run(fixture('echo'), { n: 1 }, 0).then((r) => r.value()),
      ])
      expect(results.slice(0, 2)).toEqual([
        { status: 'fulfilled', value: { slept: 1250 } },
        { status: 'fulfilled', value: { slept: 1250 } },
      ])
      const third = results[2] as PromiseRejectedResult
      expect(third.reason).toBeInstanceOf(OverloadedError)
      expect(third.reason).toMatchObject({ code: 'overloaded', stage: 'queue' })
      expect(runner.status()).toEqual({ running: 0, queued: 0, capacity: 2 })
    } finally {
      await runner.close()
    }
  })

  it('sets the queue deadline at max(1, ceil(queue / workers)) budgets', () => {
    expect(worstQueueWaitMs({ workers: 2, queueLimit: 8, timeoutMs: 2000 })).toBe(8000)
    expect(worstQueueWaitMs({ workers: 3, queueLimit: 4, timeoutMs: 1000 })).toBe(2000)
    expect(worstQueueWaitMs({ workers: 1, queueLimit: 0, timeoutMs: 1000 })).toBe(1000)
  })
})

describe('the workers regex engine', () => {
  const validate = tool('json-validate')
  const call = (pattern: string, value: string) =>
    run(tools, validate, validate.input.parse({ value, schema: { type: 'string', pattern } }))

  it('answers a catastrophic pattern of linear-engine syntax instead of backtracking for minutes', async () => {
    // On the main thread this test takes about 40 s (V8 backtracks 2^30 ways); the budget is 2 s.
    expect(await call('^(a+)+$', `${'a'.repeat(30)}!`)).toEqual({
      valid: false,
      error_count: 1,
      truncated: false,
      errors: [
        {
          instanceLocation: '',
          keyword: 'pattern',
          keywordLocation: '/pattern',
          error: 'String does not match pattern.',
        },
      ],
    })
    expect(await call('^(a+)+$', 'a'.repeat(30))).toMatchObject({ valid: true })
  })

  it('keeps ECMA-262 semantics: a backreference still backtracks, and is stopped at the budget', async () => {
    expect(await rejection(call('^(a*)*\\1$', `${'a'.repeat(28)}!`))).toBeInstanceOf(
      ToolTimeoutError,
    )
    expect(await call('^(a*)*\\1$', 'aaaa')).toMatchObject({ valid: true })
  })
})

describe('a closed runner', () => {
  it('refuses new calls and fails queued ones', async () => {
    const runner = createToolRunner({ workers: 1, timeoutMs: 500, queueLimit: 1 })
    await runner.close()
    expect(() => runner.admit()).toThrow(OverloadedError)
  })
})
