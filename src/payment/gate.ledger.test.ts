import type { SettleResponse } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import {
  echoTool,
  type FacilitatorScript,
  fakeGate,
  type inlineRunner,
  FAKE_SOLANA as SOLANA,
} from '../../test/helpers/fakes.js'
import {
  fakeJudge,
  fakeQuestionOf,
  labelOf,
  sqliteLedger,
} from '../../test/helpers/sqlite-ledger.js'
import type { SettlementVerdict } from '../settlement/types.js'
import { settlementEventId } from '../telemetry/event-row.js'
import type { LedgerEntry, SettlementLedger } from '../telemetry/ledger.js'
import type { ToolDefinition } from '../tools/types.js'
import { PaymentRequiredError, SettlementUnknownError } from './errors.js'
import { createMemoryGuard } from './guard.js'

// The settle step with the write-ahead settlement ledger, and the payer's retry of a settlement
// in doubt judged on chain (issue 30). The facilitator and the judge are scripted fakes.

const BASE = 'eip155:8453'
const LOST = 'Facilitator settle request timed out after 1000ms'

function setup(
  script: FacilitatorScript = {},
  verdict?: (label: string) => SettlementVerdict,
  judged: readonly string[] = [BASE],
) {
  // The payments' clock: a test moves it past a Retry-After.
  const clock = { now: Date.now() }
  const inner = sqliteLedger()
  const keys: string[] = []
  // The ledger as the gate sees it, keeping the keys it was given (the tests cannot compute them).
  const ledger: SettlementLedger = {
    ...inner,
    intend: async (intent, hold) => {
      if (!keys.includes(intent.key)) keys.push(intent.key)
      return inner.intend(intent, hold)
    },
  }
  const judge = verdict ? fakeJudge(judged, (q) => verdict(labelOf(q))) : undefined
  const fake = fakeGate(script, undefined, {
    ledger,
    now: () => clock.now,
    questionOf: fakeQuestionOf,
    ...(judge ? { judge: judge.judge } : {}),
  })
  const resource = { url: 'http://svc/echo' }
  const call = (input: unknown, payment: unknown) =>
    fake.gate.execute({
      tool: echoTool as ToolDefinition,
      transport: 'http',
      source: { body: new TextEncoder().encode(JSON.stringify(input)) },
      payment: { value: payment },
      resource,
    })
  const entries = async () => Promise.all(keys.map((k) => ledger.get(k))) as Promise<LedgerEntry[]>
  /** Moves the clock past the Retry-After of a settlement in doubt. */
  const later = () => {
    clock.now += RETRY_AFTER_MS
  }
  return { ...fake, call, ledger, keys, entries, later, clock, asked: judge?.asked ?? [] }
}

const RETRY_AFTER_MS = 5_000

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

/** A settle whose first answer is lost, then `then` for the next ones. */
function lostOnce(then: () => Promise<SettleResponse>): FacilitatorScript['settle'] {
  let attempt = 0
  return async () => {
    attempt++
    if (attempt === 1) throw new Error(LOST)
    return then()
  }
}

describe('payment gate: the write-ahead settlement ledger', () => {
  it('commits the intent before the settle request is sent, and its outcome after', async () => {
    let seen: (LedgerEntry | undefined)[] = []
    const fx = setup({
      settle: async () => {
        seen = await fx.entries()
        return { success: true, transaction: '0xtx', network: BASE, payer: '0xPAYER' }
      },
    })
    const paid = await fx.call({ text: 'a' }, await fx.pay())
    expect(paid.settlement.transaction).toBe('0xtx')
    expect(seen).toEqual([
      expect.objectContaining({ network: BASE, amount: '1000', tool: 'echo', outcome: null }),
    ])
    const [entry] = await fx.entries()
    expect(entry).toMatchObject({ outcome: 'settled', transaction: '0xtx', transport: 'http' })
    // The question, without the payer's address or the payload.
    expect(JSON.parse(entry?.question ?? '{}')).toEqual({
      network: BASE,
      asset: expect.any(String),
      payTo: expect.any(String),
      amount: '1000',
      evm: { nonce: expect.stringMatching(/^0x/), validBefore: 4_102_444_800 },
    })
    expect(entry?.question).not.toMatch(/signature|authorization|from/i)
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
    // Named by the payment: recorded again (by the resolver after a crash), stored once.
    expect(fx.events[1]?.id).toBe(settlementEventId(entry?.key as string, 'settled'))
  })

  it('records a refused settle as failed, and forgets the intent of a settle never sent', async () => {
    const refused = setup({
      settle: async () => ({
        success: false,
        errorReason: 'insufficient_funds',
        transaction: '',
        network: BASE,
      }),
    })
    await rejection(refused.call({ text: 'a' }, await refused.pay()))
    expect((await refused.entries()).map((e) => e.outcome)).toEqual(['failed'])
    expect(refused.events.map((e) => e.outcome)).toEqual(['verified', 'settle_failed'])

    const unsent = setup({
      settle: async () => {
        const cause = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
        throw new TypeError('fetch failed', { cause })
      },
    })
    await rejection(unsent.call({ text: 'a' }, await unsent.pay()))
    expect(await unsent.entries()).toEqual([undefined])
  })

  it('leaves a settle in doubt to whoever decides it: no settle_failed counted by the call', async () => {
    const fx = setup({ settle: async () => Promise.reject(new Error(LOST)) })
    expect(await rejection(fx.call({ text: 'a' }, await fx.pay()))).toBeInstanceOf(
      SettlementUnknownError,
    )
    expect((await fx.entries()).map((e) => e.outcome)).toEqual([null])
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified'])
  })
})

describe('payment gate: the payer retries a settlement in doubt, judged on chain', () => {
  it('landed: answers 200 with the result and the landed transaction, without settling again; counted once', async () => {
    const fx = setup({ settle: async () => Promise.reject(new Error(LOST)) }, () => ({
      kind: 'landed',
      transaction: '0xlanded',
    }))
    const payment = await fx.pay()
    await rejection(fx.call({ text: 'a' }, payment))
    const retried = await fx.call({ text: 'a' }, payment)
    expect(retried.result.value()).toEqual({ upper: 'A' })
    expect(retried.settlement).toEqual({ success: true, transaction: '0xlanded', network: BASE })
    expect(fx.calls).toEqual({ supported: 1, verify: 1, settle: 1 })
    expect(fx.asked).toHaveLength(1)
    expect((await fx.entries()).map((e) => [e.outcome, e.transaction])).toEqual([
      ['landed', '0xlanded'],
    ])
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
    expect(fx.events[1]).toMatchObject({
      network: BASE,
      amount: '1000',
      tool: 'echo',
      id: settlementEventId(fx.keys[0] as string, 'settled'),
    })
    // Settled now: the same payment replays, nothing counted or judged again.
    const again = await fx.call({ text: 'a' }, payment)
    expect(again.replayed).toBe(true)
    expect(again.settlement.transaction).toBe('0xlanded')
    expect(fx.asked).toHaveLength(1)
    expect(fx.events).toHaveLength(2)
  })

  it('landed after the resolver counted it: delivered, not counted again', async () => {
    const fx = setup({ settle: async () => Promise.reject(new Error(LOST)) }, () => ({
      kind: 'landed',
      transaction: '0xlanded',
    }))
    const payment = await fx.pay()
    await rejection(fx.call({ text: 'a' }, payment))
    // The resolver decided it meanwhile (and emitted its event).
    const [key] = fx.keys
    expect(
      await fx.ledger.decide(key as string, { outcome: 'landed', transaction: '0xlanded', at: 1 }),
    ).toBe(true)
    const retried = await fx.call({ text: 'a' }, payment)
    expect(retried.settlement.transaction).toBe('0xlanded')
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified'])
  })

  it('not landed (canceled): refused, nothing charged, the payment freed; counted settle_failed once', async () => {
    const fx = setup({ settle: async () => Promise.reject(new Error(LOST)) }, () => ({
      kind: 'not_landed',
      reason: 'canceled',
    }))
    const payment = await fx.pay()
    await rejection(fx.call({ text: 'a' }, payment))
    const refused = (await rejection(fx.call({ text: 'a' }, payment))) as PaymentRequiredError
    expect(refused).toBeInstanceOf(PaymentRequiredError)
    expect(refused.code).toBe('settlement_failed')
    expect(refused.message).toMatch(/never landed.*canceled.*nothing was charged/)
    expect(refused.paymentRequired.error).toBe('settlement_not_landed')
    expect(fx.calls.settle).toBe(1)
    expect((await fx.entries()).map((e) => e.outcome)).toEqual(['not_landed'])
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified', 'settle_failed'])
    // Freed: presented again, it is verified afresh (a canceled one fails there).
    await fx.call({ text: 'a' }, payment).catch(() => undefined)
    expect(fx.calls.verify).toBe(2)
  })

  it('undecided after its Retry-After: asks the facilitator again, as without a judge', async () => {
    const settled = setup(
      {
        settle: lostOnce(async () => ({
          success: true,
          transaction: '0xagain',
          network: BASE,
          payer: '0xPAYER',
        })),
      },
      () => ({ kind: 'undecided', why: 'rpc down' }),
    )
    const payment = await settled.pay()
    await rejection(settled.call({ text: 'a' }, payment))
    settled.later()
    const retried = await settled.call({ text: 'a' }, payment)
    expect(retried.settlement.transaction).toBe('0xagain')
    expect(settled.calls.settle).toBe(2)
    expect(settled.asked).toHaveLength(1)
    expect((await settled.entries()).map((e) => e.outcome)).toEqual(['settled'])
    expect(settled.events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
  })

  it('refused by the facilitator while the chain cannot tell (a pending transaction, a used nonce): still in doubt, never spent; delivered once it lands, counted once', async () => {
    let chain: SettlementVerdict = { kind: 'undecided', why: 'unused and still valid' }
    const fx = setup(
      {
        settle: lostOnce(async () => ({
          success: false,
          errorReason: 'invalid_exact_evm_nonce_already_used',
          transaction: '',
          network: BASE,
        })),
      },
      () => chain,
    )
    const payment = await fx.pay()
    await rejection(fx.call({ text: 'a' }, payment))
    fx.later()
    expect(await rejection(fx.call({ text: 'a' }, payment))).toMatchObject({
      code: 'settlement_unknown',
      retryAfterSeconds: 5,
    })
    expect(fx.calls.settle).toBe(2)
    // Nothing decided or counted: the chain decides.
    expect((await fx.entries()).map((e) => e.outcome)).toEqual([null])
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified'])
    // It lands: the next retry gets the result, from the chain, without the facilitator.
    chain = { kind: 'landed', transaction: '0xpending' }
    fx.later()
    const delivered = await fx.call({ text: 'a' }, payment)
    expect(delivered.result.value()).toEqual({ upper: 'A' })
    expect(delivered.settlement.transaction).toBe('0xpending')
    expect(fx.calls.settle).toBe(2)
    expect((await fx.entries()).map((e) => [e.outcome, e.transaction])).toEqual([
      ['landed', '0xpending'],
    ])
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
  })

  it('not landed (its nonce used by another transfer): refused, nothing charged, the payment freed', async () => {
    const fx = setup({ settle: async () => Promise.reject(new Error(LOST)) }, () => ({
      kind: 'not_landed',
      reason: 'nonce_used',
    }))
    const payment = await fx.pay()
    await rejection(fx.call({ text: 'a' }, payment))
    const refused = (await rejection(fx.call({ text: 'a' }, payment))) as PaymentRequiredError
    expect(refused.code).toBe('settlement_failed')
    expect(refused.message).toBe(
      "The earlier settlement of this payment never landed on chain (authorization's nonce used by another transfer of the payer): nothing was charged and the result is withheld; sign a new payment",
    )
    expect(refused.paymentRequired.error).toBe('settlement_not_landed')
    expect((await fx.entries()).map((e) => e.outcome)).toEqual(['not_landed'])
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified', 'settle_failed'])
  })

  it('retried before its Retry-After: asks the judge once, then answers from the record, nothing run and nobody asked', async () => {
    const fx = setup({ settle: async () => Promise.reject(new Error(LOST)) }, () => ({
      kind: 'undecided',
      why: 'unused and still valid',
    }))
    const runner = fx.runner as ReturnType<typeof inlineRunner>
    const payment = await fx.pay()
    await rejection(fx.call({ text: 'a' }, payment))
    const waits: unknown[] = []
    for (let i = 0; i < 20; i++) {
      fx.clock.now += 100
      const error = await rejection(fx.call({ text: 'a' }, payment))
      expect(error).toBeInstanceOf(SettlementUnknownError)
      waits.push((error as SettlementUnknownError).retryAfterSeconds)
    }
    // 2 s of retries: the Retry-After that remains, 5 then 4, 3 s.
    expect(new Set(waits)).toEqual(new Set([5, 4, 3]))
    expect({ asked: fx.asked.length, runs: runner.runs, ...fx.calls }).toEqual({
      asked: 1,
      runs: 1,
      supported: 1,
      verify: 1,
      settle: 1,
    })
    // Past it: judged, run and settled again, once.
    fx.later()
    await rejection(fx.call({ text: 'a' }, payment))
    expect({ asked: fx.asked.length, runs: runner.runs, settle: fx.calls.settle }).toEqual({
      asked: 2,
      runs: 2,
      settle: 2,
    })
  })

  it('answers a retry before its Retry-After from the record another instance wrote (one shared guard)', async () => {
    const guard = createMemoryGuard()
    const clock = { now: Date.now() }
    const gates = [0, 1].map(() =>
      fakeGate({ settle: async () => Promise.reject(new Error(LOST)) }, undefined, {
        guard,
        now: () => clock.now,
      }),
    )
    const [a, b] = gates as [ReturnType<typeof fakeGate>, ReturnType<typeof fakeGate>]
    const payment = await a.pay()
    const call = (gate: ReturnType<typeof fakeGate>) =>
      gate.gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'http',
        source: { body: new TextEncoder().encode('{"text":"a"}') },
        payment: { value: payment },
        resource: { url: 'http://svc/echo' },
      })
    await rejection(call(a))
    clock.now += 2_500
    expect(await rejection(call(b))).toMatchObject({
      code: 'settlement_unknown',
      retryAfterSeconds: 3,
    })
    expect(b.calls).toEqual({ supported: 1, verify: 0, settle: 0 })
    clock.now += 2_500
    await rejection(call(b))
    expect(b.calls.settle).toBe(1)
  })

  it('without a judge for the rail: asks the facilitator again (Solana, judge on Base only)', async () => {
    const fx = setup(
      {
        settle: lostOnce(async () => ({
          success: true,
          transaction: 'sig',
          network: SOLANA,
          payer: 'PAYER',
        })),
      },
      () => ({ kind: 'landed', transaction: 'never' }),
    )
    const payment = await fx.pay(1)
    await rejection(fx.call({ text: 'a' }, payment))
    fx.later()
    const retried = await fx.call({ text: 'a' }, payment)
    expect(retried.settlement.transaction).toBe('sig')
    expect(fx.asked).toHaveLength(0)
    expect(fx.calls.settle).toBe(2)
    expect(fx.events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
  })
})
