import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { catalog as fixtureTools } from '../../test/fixtures/runner-tools.js'
import { logger } from '../logger.js'
import { catalog } from '../tools/catalog.js'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import { checkedInput } from './check.js'
import { OverloadedError, ToolTimeoutError } from './errors.js'
import {
  admissionGraceMs,
  createToolRunner,
  FREE_CHECK_QUEUE,
  INLINE_CHECK_BYTES,
  INLINE_RUN_BYTES,
  type ToolRunner,
  worstQueueWaitMs,
} from './runner.js'

// Real worker threads. `fixtures` runs the misbehaving tools of test/fixtures/runner-tools.ts
// through the real worker module; `tools` runs the real catalogue.

const fixtureCatalog = new URL('../../test/fixtures/runner-tools.ts', import.meta.url)
const fixture = (id: string) => ({ id }) as ToolDefinition
/** The lanes of a runner that has checked nothing. */
const IDLE_LANES = { paid: { checking: 0, started: 0 }, free: { checking: 0, started: 0 } }
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
  // Every body to a checker thread and every call to a worker: the tests below check that path.
  tools = createToolRunner({
    workers: 1,
    timeoutMs: 2000,
    queueLimit: 2,
    inlineCheckBytes: 0,
    inlineRunBytes: 0,
  })
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
  (await runner.admit().run(t, checkedInput(input), now)).value()

/**
 * Runs one call, again while the runner refuses it `overloaded`: the test before may have taken a
 * thread down, and a loaded machine can take longer than the queue deadline to start the one that
 * replaces it. Serving the call is the point here; how soon is `npm run bench`'s.
 */
async function runOnceServed(runner: ToolRunner, t: ToolDefinition, input: unknown) {
  for (let attempt = 1; ; attempt++) {
    try {
      return await run(runner, t, input)
    } catch (error) {
      if (!(error instanceof OverloadedError) || attempt === 10) throw error
    }
  }
}

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
    expect(tools.status()).toEqual({
      running: 0,
      queued: 0,
      checking: 0,
      lanes: IDLE_LANES,
      capacity: 3,
    })
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
    expect(await runOnceServed(fixtures, fixture('echo'), { n: 1 })).toEqual({ input: { n: 1 } })
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
    expect(await runOnceServed(fixtures, fixture('echo'), { n: 2 })).toEqual({ input: { n: 2 } })
    expect(fixtures.status()).toEqual({
      running: 0,
      queued: 0,
      checking: 0,
      lanes: IDLE_LANES,
      capacity: 2,
    })
  })

  it('admits a call only while fewer than workers + queue limit calls run or wait past the grace', async () => {
    // One worker: the second call waits in the queue while the first sleeps. The admission's
    // clock is the test's: a queued call counts once it has waited past 500 / 20 = 25 ms.
    let clock = 1_000
    const runner = createToolRunner({
      workers: 1,
      timeoutMs: 500,
      queueLimit: 1,
      catalog: fixtureCatalog,
      now: () => clock,
    })
    try {
      await runner.warm()
      expect(admissionGraceMs(500)).toBe(25)
      const sleeping = runner
        .admit()
        .run(fixture('sleep'), checkedInput({ n: 300 }), 0)
        .then((r) => r.value())
      const queued = runner
        .admit()
        .run(fixture('echo'), checkedInput({ n: 3 }), 0)
        .then((r) => r.value())
      expect(runner.status()).toEqual({
        running: 1,
        queued: 1,
        checking: 0,
        lanes: IDLE_LANES,
        capacity: 2,
      })
      // The queued call has waited 25 ms: the queue is draining, a new call is let in.
      clock += 25
      expect(() => runner.admit()).not.toThrow()
      // 26 ms: the queue is not keeping up.
      clock += 1
      const refused = (() => {
        try {
          runner.admit()
        } catch (error) {
          return error
        }
      })()
      expect(refused).toBeInstanceOf(OverloadedError)
      expect(refused).toMatchObject({
        code: 'overloaded',
        retryAfterSeconds: 1,
        stage: 'admission',
      })
      expect(await sleeping).toEqual({ slept: 300 })
      expect(await queued).toEqual({ input: { n: 3 } })
      expect(runner.status()).toEqual({
        running: 0,
        queued: 0,
        checking: 0,
        lanes: IDLE_LANES,
        capacity: 2,
      })
    } finally {
      await runner.close()
    }
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
        a.run(fixture('sleep'), checkedInput({ n: 1250 }), 0).then((r) => r.value()),
        b.run(fixture('sleep'), checkedInput({ n: 1250 }), 0).then((r) => r.value()),
        c.run(fixture('echo'), checkedInput({ n: 1 }), 0).then((r) => r.value()),
      ])
      expect(results.slice(0, 2)).toEqual([
        { status: 'fulfilled', value: { slept: 1250 } },
        { status: 'fulfilled', value: { slept: 1250 } },
      ])
      const third = results[2] as PromiseRejectedResult
      expect(third.reason).toBeInstanceOf(OverloadedError)
      expect(third.reason).toMatchObject({ code: 'overloaded', stage: 'queue' })
      expect(runner.status()).toEqual({
        running: 0,
        queued: 0,
        checking: 0,
        lanes: IDLE_LANES,
        capacity: 2,
      })
    } finally {
      await runner.close()
    }
  })

  it('reports every run with its outcome and time on the worker, and every refusal', async () => {
    vi.spyOn(logger, 'error').mockImplementation(() => undefined)
    const runs: { tool: string; outcome: string; seconds: number }[] = []
    const rejected: string[] = []
    // The admission's clock is the test's, so the queued call has waited past its grace.
    let clock = 0
    const runner = createToolRunner({
      workers: 1,
      timeoutMs: 400,
      queueLimit: 1,
      catalog: fixtureCatalog,
      observer: { ran: (r) => runs.push(r), rejected: (reason) => rejected.push(reason) },
      now: () => clock,
    })
    try {
      await runner.warm()
      for (const id of ['echo', 'refuse', 'range', 'spin']) {
        await rejection(runner.admit().run(fixture(id), checkedInput({}), 0))
      }
      // Full: one call runs 250 ms, one waits, a third is refused at admission; then three
      // admitted at once (admission reserves nothing), the third past its 400 ms queue deadline.
      const first = [runner.admit(), runner.admit()].map((a) =>
        a.run(fixture('sleep'), checkedInput({ n: 250 }), 0),
      )
      clock += admissionGraceMs(400) + 1
      expect(() => runner.admit()).toThrow(OverloadedError)
      await Promise.allSettled(first)
      const three = [runner.admit(), runner.admit(), runner.admit()]
      await Promise.allSettled(
        three.map((a) => a.run(fixture('sleep'), checkedInput({ n: 250 }), 0)),
      )
      expect(runs.map((r) => `${r.tool} ${r.outcome}`)).toEqual([
        'echo ok',
        'refuse tool_error',
        'range failed',
        'spin timeout',
        'sleep ok',
        'sleep ok',
        'sleep ok',
        'sleep ok',
      ])
      const spin = runs[3]?.seconds ?? 0
      expect(spin).toBeGreaterThanOrEqual(0.39)
      expect(spin).toBeLessThan(5)
      // Each sleep: 250 ms on the worker; the time it waited in the queue is not counted.
      for (const r of runs.slice(4)) expect(r.seconds).toBeLessThan(0.4 + 0.25)
      expect(rejected).toEqual(['admission', 'queue'])
    } finally {
      await runner.close()
    }
  })

  it('runs an inline tool on the calling thread up to its input bound, a larger input on a worker, with the same results, errors and reports', async () => {
    const runs: string[] = []
    // A bound of 8 bytes: {"n":1} (7 bytes) runs inline, {"n":123} (9 bytes) on a worker.
    const runner = createToolRunner({
      workers: 1,
      timeoutMs: 2000,
      queueLimit: 1,
      catalog: fixtureCatalog,
      inlineRunBytes: 8,
      observer: { ran: (r) => runs.push(`${r.tool} ${r.outcome}`), rejected: () => {} },
    })
    const thread = fixtureTools.find((t) => t.id === 'thread') as ToolDefinition
    try {
      expect(await run(runner, { ...thread, inline: true }, { n: 1 })).toEqual({
        input: { n: 1 },
        thread: 0,
      })
      const worker = (await run(runner, { ...thread, inline: true }, { n: 123 })) as {
        thread: number
      }
      expect(worker.thread).toBeGreaterThan(0)
      // Without the flag, even a small input runs on a worker.
      expect(((await run(runner, thread, { n: 1 })) as { thread: number }).thread).toBeGreaterThan(
        0,
      )
      expect(runs).toEqual(['thread ok', 'thread ok', 'thread ok'])
    } finally {
      await runner.close()
    }

    // The catalogue's inline tools at the deployed bound: the same bytes and RFC 8785 digest as a
    // worker's, the checked input of exactly INLINE_RUN_BYTES included, and the same ToolError.
    expect(catalog.filter((t) => t.inline).map((t) => t.id)).toEqual(['hash', 'base64', 'hmac'])
    const deployed = createToolRunner({ workers: 1, timeoutMs: 2000, queueLimit: 1 })
    try {
      const hash = tool('hash')
      // {"algorithm":"SHA-256","input":""} is 34 bytes.
      const atBound = hash.input.parse({ input: 'x'.repeat(INLINE_RUN_BYTES - 34) })
      expect(checkedInput(atBound).bytes.length).toBe(INLINE_RUN_BYTES)
      const inputs = [hash.input.parse({ input: 'abc', algorithm: 'SHA-512' }), atBound]
      for (const input of inputs) {
        const here = await deployed.admit().run(hash, checkedInput(input), 0)
        const there = await tools.admit().run(hash, checkedInput(input), 0)
        expect([here.bytes, here.digest]).toEqual([there.bytes, there.digest])
      }
      const base64 = tool('base64')
      const bad = base64.input.parse({ mode: 'decode', input: 'ab*d' })
      const inline = await rejection(deployed.admit().run(base64, checkedInput(bad), 0))
      expect(inline).toBeInstanceOf(ToolError)
      expect({ ...(inline as ToolError) }).toEqual({
        ...((await rejection(tools.admit().run(base64, checkedInput(bad), 0))) as ToolError),
      })
    } finally {
      await deployed.close()
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
          error: 'pattern: must match the regular expression "^(a+)+$"; it does not.',
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

/**
 * Bodies of every check outcome, for the tool ids of their first element: two of them 1 KiB and
 * one byte over it (checked on the calling thread, and on a checker thread).
 */
function sampleBodies(): [string, string][] {
  const pad = (body: string, size: number) =>
    body.replace('"x"', `"${'x'.repeat(size - body.length + 1)}"`)
  return [
    ['hash', '{"input":"abc"}'],
    ['hash', ' \n '],
    ['hash', '{"input":'],
    ['hash', '{"input":1}'],
    ['json-validate', '{"value":1e400,"schema":{}}'],
    ['json-validate', '{"value":"x","schema":{"pattern":"^(a+)+$","type":"string"}}'],
    ['pipeline', `{"input":${'['.repeat(400)}${']'.repeat(400)},"operations":[{"type":"sha256"}]}`],
    ['pipeline', '{"input":"","operations":{"length":[{"toString":true}]}}'],
    ['hash', pad('{"input":"x"}', INLINE_CHECK_BYTES)],
    ['hash', pad('{"input":"x"}', INLINE_CHECK_BYTES + 1)],
  ]
}

describe('the input checker (checker threads)', () => {
  const utf8 = (text: string) => new TextEncoder().encode(text)
  const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')
  const check = (id: string, body: string, mcpRequestId?: string | number) =>
    tools.check(tool(id), {
      body: utf8(body),
      ...(mcpRequestId !== undefined ? { mcpRequestId } : {}),
    })

  it('parses and checks a body off the main thread: the RFC 8785 form with defaults, and its SHA-256', async () => {
    const outcome = await check('hash', ' { "input" : "abc" } ')
    expect(outcome.status).toBe('ok')
    if (outcome.status !== 'ok') return
    const canonical = '{"algorithm":"SHA-256","input":"abc"}'
    expect(new TextDecoder().decode(outcome.bytes)).toBe(canonical)
    expect(outcome.digest).toBe(sha256(canonical))
    // The worker runs on exactly those bytes, and states the SHA-256 of its result's RFC 8785 form.
    const result = await tools.admit().run(tool('hash'), outcome, 0)
    expect(result.value()).toMatchObject({
      hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    })
    expect(result.digest).toBe(sha256(canonicalize(result.value()) as string))
  })

  it('runs the tool on the RFC 8785 form: the result is the same whatever the order of the keys', async () => {
    // A json-validate `const` message quotes the schema's object: with the keys in RFC 8785 order
    // ("" before ":"), so that a replay or a receipt's recomputation with the keys in another
    // order gets the same result, and the same result_sha256.
    const results = await Promise.all(
      [
        '{"value":[],"schema":{"const":{":":"","":null}}}',
        '{"schema":{"const":{"":null,":":""}},"value":[]}',
      ].map(async (body) => {
        const outcome = await check('json-validate', body)
        if (outcome.status !== 'ok') throw new Error(outcome.status)
        const ran = await tools.admit().run(tool('json-validate'), outcome, 0)
        return { digest: outcome.digest, text: JSON.stringify(ran.value()), result: ran.digest }
      }),
    )
    expect(results[0]).toEqual(results[1])
    expect(results[0]?.digest).toBe(sha256('{"schema":{"const":{"":null,":":""}},"value":[]}'))
    expect(results[0]?.text).toContain('must be {\\"\\":null,\\":\\":\\"\\"}')
  })

  it('checks a body of at most 1 KiB on the calling thread, with the outcome a checker thread gives', async () => {
    const inline = createToolRunner({ workers: 1, timeoutMs: 2000, queueLimit: 2 })
    try {
      // Threads started outside the budget, as for the runners above: the body over 1 KiB goes to
      // a checker thread, and a cold start would count against the 2 s (this test once answered
      // tool_timeout beside a full CI run, load average 7 to 9).
      await inline.warm()
      expect(INLINE_CHECK_BYTES).toBe(1024)
      const bodies = sampleBodies()
      for (const [id, body] of bodies) {
        const [here, there] = [
          await inline.check(tool(id), { body: utf8(body) }),
          await tools.check(tool(id), { body: utf8(body) }),
        ]
        expect([id, body.length, here]).toEqual([id, body.length, there])
      }
      expect(bodies.at(-2)?.[1]).toHaveLength(INLINE_CHECK_BYTES)
    } finally {
      await inline.close()
    }
  })

  it('gives a verdict without the RFC 8785 form: valid where a check is ok, the same refusals, on either thread', async () => {
    // `tools` checks every body on a checker thread; `inline`, as deployed, those of at most 1 KiB
    // on the calling thread.
    const inline = createToolRunner({ workers: 1, timeoutMs: 2000, queueLimit: 2 })
    const verdicts = []
    try {
      await inline.warm()
      for (const [id, body] of sampleBodies()) {
        const full = await tools.check(tool(id), { body: utf8(body) })
        const expected = full.status === 'ok' ? { status: 'valid' } : full
        const [there, here] = [
          await tools.verdict(tool(id), { body: utf8(body) }),
          await inline.verdict(tool(id), { body: utf8(body) }),
        ]
        expect([id, body.length, there, here]).toEqual([id, body.length, expected, expected])
        verdicts.push(there.status)
      }
    } finally {
      await inline.close()
    }
    expect(verdicts).toEqual([
      'valid',
      'absent',
      'invalid_json',
      'invalid',
      'refused',
      'valid',
      'refused',
      'invalid',
      'valid',
      'valid',
    ])
  })

  it('tells an absent body, malformed JSON and schema issues apart', async () => {
    expect(await check('hash', ' \n ')).toEqual({ status: 'absent' })
    expect(await check('hash', '{"input":')).toEqual({
      status: 'invalid_json',
      message: expect.stringMatching(/^Malformed JSON body: /),
    })
    expect(await check('hash', '{"input":1}')).toEqual({
      status: 'invalid',
      issues: [{ path: '/input', message: 'Invalid input: expected string, received number' }],
    })
  })

  it('refuses an object whose length is an object, where a string or an array is expected, as invalid at its path (Zod throws on it)', async () => {
    const small = '{"input":"","operations":{"length":[{"toString":true}]}}'
    const large = `{"input":"${'a'.repeat(2000)}","operations":{"length":{"valueOf":{},"toString":{}}}}`
    for (const body of [small, large]) {
      expect(await check('pipeline', body)).toEqual({
        status: 'invalid',
        issues: [
          {
            path: '/operations',
            message:
              'Invalid input: an object whose "length" member is an object or an array cannot be validated',
          },
        ],
      })
    }
    // The checker thread still serves.
    expect(await check('hash', '{"input":1}')).toMatchObject({ status: 'invalid' })
  })

  it("refuses what the tool would refuse for its shape, with the tool's code: 1e400, 200,000 levels", async () => {
    expect(await check('json-validate', '{"value":1e400,"schema":{}}')).toEqual({
      status: 'refused',
      error: {
        code: 'number_out_of_range',
        message:
          '/value is a number beyond the IEEE 754 double range (such as 1e400), which JSON parsing turns into Infinity',
        details: { field: '/value' },
      },
    })
    const deep = `${'['.repeat(200_000)}${']'.repeat(200_000)}`
    const outcome = await check('pipeline', `{"input":${deep},"operations":[{"type":"sha256"}]}`)
    expect(outcome).toMatchObject({ status: 'refused', error: { code: 'input_too_deep' } })
  })

  it('takes the arguments of one tools/call out of an MCP body (a batch too), {} when absent', async () => {
    const batch = JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      {
        jsonrpc: '2.0',
        id: 'b',
        method: 'tools/call',
        params: { name: 'payload_hash', arguments: { input: 'x' } },
      },
      { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'payload_hash' } },
    ])
    const b = await check('hash', batch, 'b')
    const three = await check('hash', batch, 3)
    expect(b.status === 'ok' && new TextDecoder().decode(b.bytes)).toBe(
      '{"algorithm":"SHA-256","input":"x"}',
    )
    expect(three.status === 'ok' && new TextDecoder().decode(three.bytes)).toBe(
      '{"algorithm":"SHA-256","input":""}',
    )
  })
})

describe('the checker lanes', () => {
  it('gives free checks a lane of their own: a full free lane refuses free checks while a paid check runs at once', async () => {
    const runner = createToolRunner({
      workers: 1,
      timeoutMs: 20_000,
      queueLimit: 1,
      catalog: fixtureCatalog,
      inlineCheckBytes: 0,
    })
    try {
      await runner.warm()
      const body = (n: number) => ({ body: new TextEncoder().encode(JSON.stringify({ n })) })
      let freeDone = 0
      // The load this test makes: free checks that hold the free lane's thread and fill its queue.
      const free = Array.from({ length: 1 + FREE_CHECK_QUEUE }, () =>
        rejection(runner.check(fixture('slowcheck'), body(5000), 'free')).finally(() => {
          freeDone++
        }),
      )
      expect(await rejection(runner.check(fixture('slowcheck'), body(0), 'free'))).toEqual(
        new OverloadedError(20, 'admission'),
      )
      expect(await runner.check(fixture('echo'), body(1), 'paid')).toMatchObject({ status: 'ok' })
      expect(freeDone).toBe(0)
      expect(runner.status().checking).toBe(1 + FREE_CHECK_QUEUE)
      // A check names no lane: the free one. Each lane counts what it started.
      expect(await rejection(runner.check(fixture('slowcheck'), body(0)))).toEqual(
        new OverloadedError(20, 'admission'),
      )
      expect(runner.status().lanes).toEqual({
        paid: { checking: 0, started: 1 },
        free: { checking: 1 + FREE_CHECK_QUEUE, started: 1 },
      })
      await runner.close()
      await Promise.all(free)
    } finally {
      await runner.close()
    }
  }, 60_000)
})

describe('a closed runner', () => {
  it('refuses new calls and fails queued ones', async () => {
    const runner = createToolRunner({ workers: 1, timeoutMs: 500, queueLimit: 1 })
    await runner.close()
    expect(() => runner.admit()).toThrow(OverloadedError)
  })
})
