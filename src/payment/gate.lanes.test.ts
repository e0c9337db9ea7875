import { paymentIdentifierSchema } from '@x402/extensions/payment-identifier'
import { describe, expect, it } from 'vitest'
import {
  echoTool,
  type FacilitatorScript,
  fakeGate,
  fakeNonceOf,
  inlineRunner,
} from '../../test/helpers/fakes.js'
import { CheckTimeoutError, OverloadedError } from '../runner/errors.js'
import type { Lane } from '../runner/runner.js'
import type { ToolDefinition } from '../tools/types.js'
import {
  GuardUnavailableError,
  InvalidInputError,
  PaymentIdentifierConflictError,
  PaymentInProgressError,
  PaymentRequiredError,
} from './errors.js'
import { createMemoryGuard, type GuardState } from './guard.js'
import { paymentIdentity } from './payment-key.js'
import type { ShapedPayment } from './payment-shape.js'

// The lane rule of issue 40 (round three, findings 4 and 5): a call's input is checked on the
// free lane until its payment verified (or the guard already holds that very payment); only then
// on the paid lane. The runner is the inline fake, whose lanes a test can refuse as a full one
// would (test/helpers/fakes.ts); the facilitator is scripted.

const full = (lane: Lane) => (lane === 'free' ? new OverloadedError(2) : undefined)
const slow = (lane: Lane) => (lane === 'free' ? new CheckTimeoutError(2000) : undefined)

function setup(script: FacilitatorScript = {}, guard = createMemoryGuard()) {
  const runner = inlineRunner()
  const fake = fakeGate(script, undefined, { runner, guard })
  const resource = { url: 'http://svc/echo', description: 'Echo', mimeType: 'application/json' }
  const call = (input: unknown, payment: unknown) =>
    fake.gate.execute({
      tool: echoTool as ToolDefinition,
      transport: 'http',
      source: { body: new TextEncoder().encode(JSON.stringify(input)) },
      payment: { value: payment },
      resource,
    })
  return { ...fake, runner, call }
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

/** The facilitator rejects payments whose nonce starts with "x" (no funds). */
const unfunded: FacilitatorScript = {
  verify: async (p) =>
    String(fakeNonceOf(p)).startsWith('x')
      ? { isValid: false, invalidReason: 'insufficient_funds', payer: '0xNOBODY' }
      : { isValid: true, payer: '0xPAYER' },
}

describe('payment gate: the lanes of a paying call', () => {
  it('checks the input on the free lane first: an invalid body is a 400 with nothing verified', async () => {
    const { call, calls, runner, pay } = setup()
    expect(await rejection(call({ text: 1 }, await pay()))).toBeInstanceOf(InvalidInputError)
    expect(runner.lanes).toEqual(['free'])
    expect(calls.verify).toBe(0)
    const paid = await call({ text: 'abc' }, await pay(0, 'n2'))
    expect(paid.result.value()).toEqual({ upper: 'ABC' })
    expect(runner.lanes).toEqual(['free', 'free'])
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 1 })
  })

  it('verifies a payment before its input goes to the paid lane when the free lane is full or slow, and verifies it once', async () => {
    for (const refuse of [full, slow]) {
      const { call, calls, events, runner, pay } = setup()
      runner.refuse = refuse
      const paid = await call({ text: 'abc' }, await pay())
      expect(paid.result.value()).toEqual({ upper: 'ABC' })
      expect(runner.lanes).toEqual(['free', 'paid'])
      expect(calls).toEqual({ supported: 1, verify: 1, settle: 1 })
      expect(events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
    }
  })

  it('never puts a payment that fails verify on the paid lane: 402 payment_verification_failed, nothing run', async () => {
    const { call, calls, events, runner, pay } = setup(unfunded)
    runner.refuse = full
    const e = (await rejection(call({ text: 'abc' }, await pay(0, 'x1')))) as PaymentRequiredError
    expect(e).toBeInstanceOf(PaymentRequiredError)
    expect([e.code, e.message]).toEqual([
      'payment_verification_failed',
      'The facilitator rejected the payment: insufficient_funds',
    ])
    expect(e.paymentRequired.error).toBe('insufficient_funds')
    expect(runner.lanes).toEqual(['free'])
    expect([runner.runs, calls.settle, events]).toEqual([0, 0, []])
  })

  it('refuses an invalid body checked on the paid lane after verify with its 400: no verified event, nothing settled, the payment free again', async () => {
    const { call, calls, events, runner, pay } = setup()
    runner.refuse = full
    const payment = await pay()
    expect(await rejection(call({ text: 1 }, payment))).toBeInstanceOf(InvalidInputError)
    expect(runner.lanes).toEqual(['free', 'paid'])
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 0 })
    expect(events).toEqual([])
    // The claim was never taken: the same payment pays for a valid body.
    runner.refuse = () => undefined
    expect((await call({ text: 'ok' }, payment)).result.value()).toEqual({ upper: 'OK' })
  })

  it('refuses before verify when the tool runner is full, or the guard is unreachable', async () => {
    const { call, calls, runner, pay } = setup()
    runner.refuse = full
    runner.capacity = 0
    expect(await rejection(call({ text: 'abc' }, await pay()))).toBeInstanceOf(OverloadedError)
    expect(runner.lanes).toEqual(['free'])
    const guard = createMemoryGuard()
    guard.peek = async () => {
      throw new GuardUnavailableError()
    }
    const down = setup({}, guard)
    down.runner.refuse = full
    expect(await rejection(down.call({ text: 'abc' }, await down.pay()))).toBeInstanceOf(
      GuardUnavailableError,
    )
    expect([calls.verify, down.calls.verify, down.runner.lanes]).toEqual([0, 0, ['free']])
  })

  it('replays a settled payment on the paid lane without verify when the free lane is full, at most REPLAY_LIMIT times', async () => {
    const { call, calls, runner, pay } = setup()
    const payment = await pay()
    await call({ text: 'abc' }, payment)
    runner.refuse = full
    const replays = [
      await call({ text: 'abc' }, payment),
      await call({ text: 'abc' }, payment),
      await call({ text: 'abc' }, payment),
    ]
    expect(replays.map((r) => r.replayed)).toEqual([true, true, true])
    const beyond = (await rejection(call({ text: 'abc' }, payment))) as PaymentRequiredError
    expect(beyond.code).toBe('duplicate_settlement')
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 1 })
    expect(runner.lanes).toEqual(['free', ...Array(4).fill(['free', 'paid']).flat()])
  })

  it('answers a retry of a payment still in progress 409 without verifying it again', async () => {
    let release: () => void = () => {}
    const { call, calls, runner, pay } = setup({
      settle: () =>
        new Promise((resolve) => {
          release = () => resolve({ success: true, transaction: '0xtx', network: 'eip155:8453' })
        }),
    })
    const payment = await pay()
    const first = call({ text: 'abc' }, payment)
    while (calls.settle === 0) await new Promise((r) => setTimeout(r, 1))
    runner.refuse = full
    expect(await rejection(call({ text: 'abc' }, payment))).toBeInstanceOf(PaymentInProgressError)
    expect(calls.verify).toBe(1)
    release()
    expect((await first).result.value()).toEqual({ upper: 'ABC' })
  })

  it('earns the paid lane without verify only for its very payment held pending, settled or in doubt', async () => {
    const cases: [GuardState | 'other proof' | 'none', string, number][] = [
      ['pending', 'PaymentInProgressError', 0],
      ['settled', 'replayed', 0],
      ['unknown', 'settled again', 0],
      ['spent', 'duplicate_settlement', 1],
      ['other proof', 'PaymentConflictError', 1],
      ['none', 'settled', 1],
    ]
    for (const [held, answer, verifies] of cases) {
      const guard = createMemoryGuard()
      const { call, calls, runner, pay } = setup({}, guard)
      const payment = await pay()
      const identity = paymentIdentity(payment as ShapedPayment, payment.accepted)
      if (!identity) throw new Error('no identity')
      const digest = (await call({ text: 'abc' }, await pay(0, 'probe'))).inputDigest
      if (held !== 'none') {
        await guard.put(identity.key, {
          state: held === 'other proof' ? 'settled' : held,
          call: { tool: 'echo', inputDigest: digest },
          payment: identity.key,
          proof: held === 'other proof' ? 'another signature' : identity.proof,
          settlement: { success: true, transaction: '0xtx', network: 'eip155:8453' },
        })
      }
      const before = { ...calls }
      runner.refuse = full
      const outcome = await call({ text: 'abc' }, payment).then(
        (paid) => (paid.replayed ? 'replayed' : held === 'unknown' ? 'settled again' : 'settled'),
        (error: { name: string; code?: string }) =>
          error instanceof PaymentRequiredError ? error.code : error.name,
      )
      expect([held, outcome, calls.verify - before.verify]).toEqual([held, answer, verifies])
      expect(runner.lanes.slice(-2)).toEqual(['free', 'paid'])
    }
  })

  it("verifies another payer's payment under a held id once: the paid lane's verdict also answers the id's owner", async () => {
    const id = 'pay_7d5d747be160e280504c099d984bcfe0'
    const withId = {
      'payment-identifier': { info: { required: false, id }, schema: paymentIdentifierSchema },
    }
    const { call, calls, runner, pay } = setup({
      verify: async (p) => ({
        isValid: true,
        payer: String(fakeNonceOf(p)).startsWith('v') ? '0xVICTIM' : '0xATTACKER',
      }),
    })
    await call({ text: 'abc' }, await pay(0, 'v1', '1000', withId))
    runner.refuse = full
    const e = await rejection(call({ text: 'abc' }, await pay(0, 'a1', '1000', withId)))
    expect(e).toBeInstanceOf(PaymentIdentifierConflictError)
    expect(calls).toEqual({ supported: 1, verify: 2, settle: 1 })
  })
})
