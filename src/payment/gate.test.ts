import { FacilitatorTimeoutError, SettleError, VerifyError } from '@x402/core/types'
import { paymentIdentifierSchema } from '@x402/extensions/payment-identifier'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  echoTool,
  type FacilitatorScript,
  FAKE_FEE_PAYER as FEE_PAYER,
  fakeGate,
  fakeNonceOf,
  inlineRunner,
  fakeRails as rails,
  FAKE_SOLANA as SOLANA,
} from '../../test/helpers/fakes.js'
import { createFacilitatorLink } from '../facilitators/link.js'
import { OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import {
  FacilitatorUnavailableError,
  GuardUnavailableError,
  InvalidInputError,
  PaymentConflictError,
  PaymentIdentifierConflictError,
  PaymentInProgressError,
  PaymentRequiredError,
  SettlementUnknownError,
  ShuttingDownError,
} from './errors.js'
import { createPaymentGate, MAX_PAYMENT_BYTES } from './gate.js'
import { createMemoryGuard, DUPLICATE_WINDOW_MS } from './guard.js'
import {
  CLOCK_SKEW_SECONDS,
  matchOffer,
  SOLANA_TRANSACTION_LIFETIME_SECONDS,
} from './payment-shape.js'

// Unit tests of our own adapter: the facilitator is a scripted fake (test/helpers/fakes.ts).

function setup(
  script: FacilitatorScript = {},
  supportedNetworks?: string[],
  extra: Parameters<typeof fakeGate>[2] = {},
) {
  const fake = fakeGate(script, supportedNetworks, extra)
  const resource = { url: 'http://svc/echo', description: 'Echo', mimeType: 'application/json' }
  const call = (input: unknown, payment: unknown) =>
    fake.gate.execute({
      tool: echoTool as ToolDefinition,
      transport: 'http',
      ...bodyOf(input),
      ...(payment === undefined ? {} : { payment: { value: payment } }),
      resource,
    })
  return { ...fake, call }
}

/** The request body of an input: its JSON, or none for `undefined`. */
const bodyOf = (input: unknown) =>
  input === undefined ? {} : { source: { body: new TextEncoder().encode(JSON.stringify(input)) } }

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error('expected a rejection')
}

describe('payment gate', () => {
  it('answers an unpaid call with both rails, EVM first, exact amounts and the input check', async () => {
    const { call, calls } = setup()
    const error = await rejection(call({ text: 'this is far too long' }, undefined))
    expect(error).toBeInstanceOf(PaymentRequiredError)
    const e = error as PaymentRequiredError
    expect(e.code).toBe('payment_required')
    expect(e.paymentRequired.x402Version).toBe(2)
    expect(e.paymentRequired.resource.url).toBe('http://svc/echo')
    expect(e.paymentRequired.accepts).toEqual([
      {
        scheme: 'exact',
        network: 'eip155:8453',
        amount: '1000',
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
        maxTimeoutSeconds: 120,
        extra: { name: 'USD Coin', version: '2' },
      },
      {
        scheme: 'exact',
        network: SOLANA,
        amount: '1000',
        asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
        payTo: '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4',
        maxTimeoutSeconds: 120,
        extra: { feePayer: FEE_PAYER },
      },
    ])
    expect(e.extras.inputCheck).toEqual({
      valid: false,
      errors: [{ path: '/text', message: 'Too big: expected string to have <=10 characters' }],
    })
    expect(calls).toEqual({ supported: 1, verify: 0, settle: 0 })
  })

  it('leaves out a rail the facilitator does not support', async () => {
    const { call, link } = setup({}, [SOLANA])
    const e = (await rejection(call(undefined, undefined))) as PaymentRequiredError
    expect(e.paymentRequired.accepts.map((a) => a.network)).toEqual([SOLANA])
    expect(link.status().rails).toEqual([
      { id: 'evm', network: 'eip155:8453', live: false },
      { id: 'solana', network: SOLANA, live: true },
    ])
  })

  it('fails closed with 503 when the facilitator supports neither rail', async () => {
    const { call } = setup({}, ['eip155:1'])
    expect(await rejection(call(undefined, undefined))).toBeInstanceOf(FacilitatorUnavailableError)
  })

  it('fails closed when /supported is unreachable, and fails fast while it stays down', async () => {
    const { call, calls } = setup({
      supported: async () => {
        throw new TypeError('fetch failed')
      },
    })
    expect(await rejection(call(undefined, undefined))).toBeInstanceOf(FacilitatorUnavailableError)
    expect(await rejection(call(undefined, undefined))).toBeInstanceOf(FacilitatorUnavailableError)
    expect(calls.supported).toBe(1)
  })

  it('fails closed with no facilitator configured', async () => {
    const link = createFacilitatorLink({ url: undefined, timeoutMs: 1000, rails })
    const gate = createPaymentGate({
      link,
      guard: createMemoryGuard(),
      runner: inlineRunner(),
      payerHash: (p) => p,
    })
    const error = await rejection(
      gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'http',
        ...bodyOf({}),
        resource: { url: 'x' },
      }),
    )
    expect(error).toBeInstanceOf(FacilitatorUnavailableError)
    expect(link.status().state).toBe('unconfigured')
  })

  it('rejects invalid input before any facilitator call', async () => {
    const { call, calls, pay } = setup()
    const error = await rejection(call({ text: 1 }, await pay()))
    expect(error).toBeInstanceOf(InvalidInputError)
    expect((error as InvalidInputError).issues).toEqual([
      { path: '/text', message: 'Invalid input: expected string, received number' },
    ])
    expect(calls.verify + calls.settle).toBe(0)
  })

  it('verifies, runs, settles and reports events in order', async () => {
    const { call, calls, events, pay } = setup()
    const out = await call({ text: 'abc' }, await pay(1))
    expect(out.result.value()).toEqual({ upper: 'ABC' })
    expect(out.settlement).toEqual({
      success: true,
      transaction: '0xtx',
      network: SOLANA,
      payer: '0xPAYER',
    })
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 1 })
    expect(events.map((e) => [e.outcome, e.network, e.amount, e.tool, e.payer])).toEqual([
      ['verified', SOLANA, '1000', 'echo', '0xPAYER'],
      ['settled', SOLANA, '1000', 'echo', '0xPAYER'],
    ])
  })

  it('never settles a call whose tool failed, and lets the payment be reused', async () => {
    const { call, calls, events, pay } = setup()
    const payment = await pay()
    const error = await rejection(call({ text: 'boom' }, payment))
    expect(error).toBeInstanceOf(ToolError)
    expect(calls.settle).toBe(0)
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
    const retry = await call({ text: 'ok' }, payment)
    expect(retry.result.value()).toEqual({ upper: 'OK' })
  })

  it('rejects a payment that matches no rail (underpaid) without calling the facilitator', async () => {
    const { call, calls, pay } = setup()
    const payment = await pay()
    payment.accepted = { ...payment.accepted, amount: '999' }
    const e = (await rejection(call({ text: 'a' }, payment))) as PaymentRequiredError
    expect(e.code).toBe('invalid_payment')
    expect(e.message).toBe(
      'The payment matches none of the offered rails: amount "999" is not the offered "1000" for exact on eip155:8453',
    )
    expect(calls.verify).toBe(0)
  })

  it('names the field a non-matching payment departs in', async () => {
    const { link, pay } = setup()
    const offers = await (await link.ready()).accepts('1000')
    const { accepted } = await pay()
    const problem = (changed: Partial<typeof accepted>) =>
      (matchOffer(offers, { ...accepted, ...changed }) as { problem: string }).problem
    expect(problem({ scheme: 'upto' })).toBe('scheme "upto" is not offered (offered: "exact")')
    expect(problem({ network: 'eip155:1' })).toBe(
      `network "eip155:1" is not offered (offered: "eip155:8453", "${SOLANA}")`,
    )
    expect(problem({ payTo: '0x0' })).toBe(
      `payTo "0x0" is not the offered "${accepted.payTo}" for exact on eip155:8453`,
    )
    expect(problem({ maxTimeoutSeconds: 1 })).toBe(
      'maxTimeoutSeconds 1 is not the offered 120 for exact on eip155:8453',
    )
    expect(problem({ extra: { ...accepted.extra, name: 'USDC' } })).toBe(
      'extra.name is not the offered one for exact on eip155:8453',
    )
    expect(problem({ extra: { ...accepted.extra, more: 1 } })).toBe(
      'extra.more is not the offered one for exact on eip155:8453',
    )
    expect(matchOffer(offers, accepted)).toEqual({ matched: offers[0] })
  })

  it(`refuses a payment over its bounds or ${MAX_PAYMENT_BYTES} bytes of JSON, or one that could not be read, before any facilitator call`, async () => {
    const { call, calls, pay } = setup()
    const padded = { ...(await pay()), padding: 'x'.repeat(100) }
    const extra = (await rejection(call({ text: 'a' }, padded))) as PaymentRequiredError
    expect([extra.code, extra.message]).toEqual([
      'invalid_payment',
      'The payment is not a valid x402 v2 PaymentPayload of scheme exact: Unrecognized key: "padding"',
    ])
    const long = { ...(await pay()), padding: 'x'.repeat(MAX_PAYMENT_BYTES) }
    const big = (await rejection(call({ text: 'a' }, long))) as PaymentRequiredError
    expect(big.message).toBe('The payment is out of bounds: a string is longer than 8192')
    let deep: unknown = 1
    for (let i = 0; i < 100_000; i++) deep = [deep]
    const nested = (await rejection(
      call({ text: 'a' }, { x402Version: 2, deep }),
    )) as PaymentRequiredError
    expect(nested.message).toBe(
      'The payment is out of bounds: it is nested more than 32 levels deep',
    )
    const unread = (await rejection(
      setup().gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'http',
        ...bodyOf({ text: 'a' }),
        payment: { header: '%%% not base64' },
        resource: { url: 'http://svc/echo', description: 'Echo', mimeType: 'application/json' },
      }),
    )) as PaymentRequiredError
    expect([unread.code, unread.message, unread.paymentRequired.error]).toEqual([
      'invalid_payment',
      'The payment could not be read: PAYMENT-SIGNATURE is not Base64 (RFC 4648 section 4)',
      'invalid_payload',
    ])
    expect(calls.verify + calls.settle).toBe(0)
  })

  it('rejects a payment that is not a PaymentPayload', async () => {
    const { call } = setup()
    const e = (await rejection(call({ text: 'a' }, null))) as PaymentRequiredError
    expect(e.code).toBe('invalid_payment')
    expect(e.paymentRequired.error).toBe('invalid_payload')
  })

  it('passes the facilitator verify reason through unchanged', async () => {
    const { call, calls, pay } = setup({
      verify: async () => ({ isValid: false, invalidReason: 'insufficient_funds', payer: '0xP' }),
    })
    const e = (await rejection(call({ text: 'a' }, await pay()))) as PaymentRequiredError
    expect(e.code).toBe('payment_verification_failed')
    expect(e.paymentRequired.error).toBe('insufficient_funds')
    expect(calls.settle).toBe(0)
  })

  it('treats a facilitator 4xx VerifyError as a verdict and a 5xx as an outage', async () => {
    const verdict = setup({
      verify: async () => {
        throw new VerifyError(400, {
          isValid: false,
          invalidReason: 'invalid_exact_evm_payload_signature',
        })
      },
    })
    const e = (await rejection(
      verdict.call({ text: 'a' }, await verdict.pay()),
    )) as PaymentRequiredError
    expect(e.paymentRequired.error).toBe('invalid_exact_evm_payload_signature')
    const outage = setup({
      verify: async () => {
        throw new VerifyError(502, { isValid: false, invalidReason: 'upstream' })
      },
    })
    expect(await rejection(outage.call({ text: 'a' }, await outage.pay()))).toBeInstanceOf(
      FacilitatorUnavailableError,
    )
  })

  it('withholds the result when settlement fails and keeps the payment claimed', async () => {
    const { call, calls, events, pay } = setup({
      settle: async () => ({
        success: false,
        errorReason: 'invalid_transaction_state',
        transaction: '',
        network: 'eip155:8453',
      }),
    })
    const payment = await pay()
    const e = (await rejection(call({ text: 'a' }, payment))) as PaymentRequiredError
    expect(e.code).toBe('settlement_failed')
    expect(e.extras.settlement?.errorReason).toBe('invalid_transaction_state')
    expect(Object.keys(e.extras)).toEqual(['settlement'])
    expect(events.map((x) => x.outcome)).toEqual(['verified', 'settle_failed'])
    const again = (await rejection(call({ text: 'a' }, payment))) as PaymentRequiredError
    expect(again.code).toBe('duplicate_settlement')
    expect(calls.settle).toBe(1)
  })

  it('maps a SettleError 4xx to settlement_failed and a settle timeout to 503', async () => {
    const rejected = setup({
      settle: async () => {
        throw new SettleError(400, {
          success: false,
          errorReason: 'insufficient_funds',
          transaction: '',
          network: 'eip155:8453',
        })
      },
    })
    const e = (await rejection(
      rejected.call({ text: 'a' }, await rejected.pay()),
    )) as PaymentRequiredError
    expect(e.code).toBe('settlement_failed')
    const timedOut = setup({
      settle: async () => {
        throw new FacilitatorTimeoutError('settle', 1000)
      },
    })
    const unknown = await rejection(timedOut.call({ text: 'a' }, await timedOut.pay()))
    expect(unknown).toBeInstanceOf(SettlementUnknownError)
    expect(unknown).toMatchObject({ code: 'settlement_unknown', retryAfterSeconds: 5 })
    expect(timedOut.link.status().state).toBe('unavailable')
    // A connection refused never reached the facilitator: 503, and the payment is free again.
    const refused = setup({
      settle: async () => {
        throw new TypeError('fetch failed', { cause: { code: 'ECONNREFUSED' } })
      },
    })
    const payment = await refused.pay()
    expect(await rejection(refused.call({ text: 'a' }, payment))).toBeInstanceOf(
      FacilitatorUnavailableError,
    )
    expect(await rejection(refused.call({ text: 'a' }, payment))).toBeInstanceOf(
      FacilitatorUnavailableError,
    )
    expect(refused.calls.settle).toBe(2)
  })

  it('passes only errorReason, transaction and network of a failed SettleResponse to the client', async () => {
    const { call, pay } = setup({
      settle: async () => ({
        success: false,
        errorReason: 'transaction_failed',
        errorMessage: 'RPC https://key@rpc.example/v2/SECRET: execution reverted',
        transaction: '0xabc',
        network: 'eip155:8453',
        payer: '0xPAYER',
      }),
    })
    const e = (await rejection(call({ text: 'a' }, await pay()))) as PaymentRequiredError
    expect(e.code).toBe('settlement_failed')
    expect(e.extras.settlement).toEqual({
      success: false,
      errorReason: 'transaction_failed',
      transaction: '0xabc',
      network: 'eip155:8453',
    })
  })

  it('holds a payment whose settlement is in doubt, and settles it again on a retry of the same payment', async () => {
    let attempt = 0
    let now = Date.now()
    const { call, calls, events, pay, runner } = setup(
      {
        settle: async () => {
          attempt++
          if (attempt === 1) throw new Error('Facilitator settle request timed out after 1000ms')
          return {
            success: true,
            transaction: '0xlanded',
            network: 'eip155:8453',
            payer: '0xPAYER',
          }
        },
      },
      undefined,
      { now: () => now },
    )
    const payment = await pay()
    expect(await rejection(call({ text: 'a' }, payment))).toMatchObject({
      code: 'settlement_unknown',
      retryAfterSeconds: 5,
    })
    // Another input with it: refused, nothing settled.
    expect(await rejection(call({ text: 'b' }, payment))).toMatchObject({
      code: 'duplicate_settlement',
    })
    // Before its Retry-After: answered from the record, with the time that remains.
    now += 3_200
    expect(await rejection(call({ text: 'a' }, payment))).toMatchObject({
      code: 'settlement_unknown',
      retryAfterSeconds: 2,
    })
    expect(calls.settle).toBe(1)
    expect((runner as ReturnType<typeof inlineRunner>).runs).toBe(1)
    now += 1_800
    const retried = await call({ text: 'a' }, payment)
    expect(retried.result.value()).toEqual({ upper: 'A' })
    expect(retried.settlement.transaction).toBe('0xlanded')
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 2 })
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'settle_failed', 'settled'])
    // Settled now: the same payment replays.
    expect((await call({ text: 'a' }, payment)).replayed).toBe(true)
  })

  it('lets exactly one of two concurrent calls with the same payment through; the other gets 409', async () => {
    const { call, calls, pay } = setup()
    const payment = await pay()
    const results = await Promise.allSettled([
      call({ text: 'a' }, payment),
      call({ text: 'a' }, payment),
    ])
    expect(results.map((r) => r.status).sort()).toEqual(['fulfilled', 'rejected'])
    const rejected = results.find((r) => r.status === 'rejected') as PromiseRejectedResult
    expect(rejected.reason).toBeInstanceOf(PaymentInProgressError)
    expect(rejected.reason).toMatchObject({ code: 'payment_in_progress', retryAfterSeconds: 1 })
    expect(calls.settle).toBe(1)
  })
})

describe('payment gate: a JSON null body', () => {
  it('is a body, not "no body": refused as invalid_request before verify, even for a tool whose fields all have defaults', async () => {
    const defaults = {
      ...echoTool,
      input: z.object({ text: z.string().max(10).default('x') }).strict(),
    } as unknown as ToolDefinition
    const { gate, calls, pay, link } = fakeGate()
    await link.ready()
    const resource = { url: 'http://svc/echo' }
    const run = (input: unknown) =>
      gate.execute({
        tool: defaults,
        transport: 'http',
        ...bodyOf(input),
        resource,
      })
    const unpaid = (await rejection(run(null))) as PaymentRequiredError
    expect(unpaid.extras.inputCheck?.valid).toBe(false)
    const paid = await rejection(
      gate.execute({
        tool: defaults,
        transport: 'http',
        ...bodyOf(null),
        payment: { value: await pay() },
        resource,
      }),
    )
    expect(paid).toBeInstanceOf(InvalidInputError)
    // A paid HTTP call with no body at all is refused too: a JSON body is required.
    const none = await rejection(
      gate.execute({
        tool: defaults,
        transport: 'http',
        payment: { value: await pay(0, 'n3') },
        resource,
      }),
    )
    expect(none).toMatchObject({ code: 'invalid_json', message: 'A JSON request body is required' })
    expect(calls.verify + calls.settle).toBe(0)
    // MCP arguments that are absent read as {}: every field has its default.
    const ok = await gate.execute({
      tool: defaults,
      transport: 'mcp',
      source: {
        body: new TextEncoder().encode(
          '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"payload_echo"}}',
        ),
        mcpRequestId: 7,
      },
      payment: { value: await pay(0, 'n2') },
      resource,
    })
    expect(ok.result.value()).toEqual({ upper: 'X' })
  })
})

describe('payment gate: idempotent replays', () => {
  const id = 'pay_7d5d747be160e280504c099d984bcfe0'
  const withId = (value: string) => ({
    'payment-identifier': { info: { required: false, id: value }, schema: paymentIdentifierSchema },
  })

  it('declares the optional payment-identifier extension in every PaymentRequired', async () => {
    const { call } = setup()
    const e = (await rejection(call(undefined, undefined))) as PaymentRequiredError
    expect(e.paymentRequired.extensions?.['payment-identifier']).toEqual({
      info: { required: false },
      schema: paymentIdentifierSchema,
    })
  })

  it('replays a settled payment for the same input: same result and SettleResponse (no payer), no second verify or settle', async () => {
    const { call, calls, events, pay } = setup()
    const payment = await pay()
    const first = await call({ text: 'abc' }, payment)
    const again = await call({ text: 'abc' }, payment)
    expect(first.replayed).toBeUndefined()
    expect(again.replayed).toBe(true)
    expect(again.result.value()).toEqual({ upper: 'ABC' })
    expect(Buffer.from(again.result.bytes).toString()).toBe(
      Buffer.from(first.result.bytes).toString(),
    )
    expect(first.settlement).toEqual({
      success: true,
      transaction: '0xtx',
      network: 'eip155:8453',
      payer: '0xPAYER',
    })
    expect(again.settlement).toEqual({ success: true, transaction: '0xtx', network: 'eip155:8453' })
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 1 })
    expect(events.map((x) => x.outcome)).toEqual(['verified', 'settled'])
  })

  it('refuses the same payment for a different input or tool with duplicate_settlement', async () => {
    const { call, calls, pay } = setup()
    const payment = await pay()
    await call({ text: 'abc' }, payment)
    const e = (await rejection(call({ text: 'abd' }, payment))) as PaymentRequiredError
    expect(e).toBeInstanceOf(PaymentRequiredError)
    expect(e.code).toBe('duplicate_settlement')
    expect(e.message).toBe(
      'This payment already paid for a different call (tool or input); sign a new one',
    )
    expect(calls.settle).toBe(1)
  })

  it('replays by payment-identifier id for its own payer, re-signed: verified, never settled again', async () => {
    const { call, calls, pay } = setup()
    const first = await call({ text: 'abc' }, await pay(0, 'n1', '1000', withId(id)))
    const again = await call({ text: 'abc' }, await pay(0, 'n2', '1000', withId(id)))
    expect(again.replayed).toBe(true)
    expect(again.settlement.transaction).toBe(first.settlement.transaction)
    // The re-signed payment was verified (its payer must be the id's), never settled.
    expect(calls).toEqual({ supported: 1, verify: 2, settle: 1 })
    const other = (await rejection(
      call({ text: 'xyz' }, await pay(0, 'n3', '1000', withId(id))),
    )) as PaymentRequiredError
    expect(other.code).toBe('duplicate_settlement')
    // Another id with the first payment itself: the payment's own key still guards it.
    const reused = await call({ text: 'abc' }, await pay(0, 'n1', '1000', withId(`${id}_2`)))
    expect(reused.replayed).toBe(true)
    expect(calls.settle).toBe(1)
  })

  it("answers another payer holding someone's id with 409 payment_identifier_conflict, whatever the input", async () => {
    // The fake facilitator reads the payer from the nonce: "v…" the victim, "a…" the attacker;
    // "x…" does not verify at all.
    const { call, calls, pay } = setup({
      verify: async (p) => {
        const nonce = String(fakeNonceOf(p))
        if (nonce.startsWith('x')) return { isValid: false, invalidReason: 'invalid_signature' }
        return { isValid: true, payer: nonce.startsWith('v') ? '0xVICTIM' : '0xATTACKER' }
      },
    })
    await call({ text: 'secret' }, await pay(0, 'v1', '1000', withId(id)))
    const guesses = await Promise.all(
      ['secret', 'guess', 'other', 'secret'].map(async (text, i) =>
        rejection(call({ text }, await pay(0, `${i === 3 ? 'x' : 'a'}${i}`, '1000', withId(id)))),
      ),
    )
    for (const e of guesses) {
      expect(e).toBeInstanceOf(PaymentIdentifierConflictError)
      expect(e).toMatchObject({
        code: 'payment_identifier_conflict',
        message:
          'This payment-identifier id is held by another payment; nothing was charged. Use a new, random id',
      })
    }
    expect(calls.settle).toBe(1)
  })

  it('replays a settled payment at most REPLAY_LIMIT times, then refuses it', async () => {
    const { call, calls, pay } = setup()
    const payment = await pay()
    await call({ text: 'abc' }, payment)
    for (let i = 0; i < 3; i++) expect((await call({ text: 'abc' }, payment)).replayed).toBe(true)
    const e = (await rejection(call({ text: 'abc' }, payment))) as PaymentRequiredError
    expect(e.code).toBe('duplicate_settlement')
    expect(e.message).toBe(
      'This payment was already answered 3 more times (REPLAY_LIMIT): its replays are used up; sign a new one',
    )
    expect(calls.settle).toBe(1)
  })

  /** A quota of `points` that records what the gate does with it, in order. */
  const recordingQuota = (points = Number.POSITIVE_INFINITY) => {
    const log: string[] = []
    let left = points
    const quota = {
      async charge(n = 1) {
        if (left < n) throw Object.assign(new Error('over'), { code: 'rate_limited' })
        left -= n
        log.push(`charge ${n}`)
      },
      refund(n: number) {
        log.push(`refund ${n}`)
      },
      takeBack(n: number) {
        log.push(`takeBack ${n}`)
      },
    }
    return { quota, log }
  }

  it("charges the client's quota before any work on a paid call, gives it back at verify with the settled credit, and refuses with 429 (nothing runs) over the limit", async () => {
    const runner = inlineRunner()
    const { gate, pay, calls } = fakeGate({}, undefined, { runner })
    const { quota, log } = recordingQuota(3)
    const resource = { url: 'http://svc/echo' }
    const paid = async (payment: unknown, input: unknown = { text: 'a' }) =>
      gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'http',
        ...bodyOf(input),
        payment: { value: payment },
        resource,
        quota,
      })
    const payment = await pay()
    await paid(payment)
    // Its point back at verify; at settle the credit of its 402 (1 point) and one more.
    expect([log, runner.runs]).toEqual([['charge 1', 'refund 1', 'refund 2'], 1])
    log.length = 0
    await paid(payment) // a replay: its point, nothing given back
    expect(await rejection(paid({ junk: true }))).toMatchObject({ code: 'invalid_payment' })
    expect([log, runner.runs]).toEqual([['charge 1', 'charge 1'], 2])
    // Over the limit: refused before the payment is read, checked or run.
    expect(await rejection(paid(payment))).toMatchObject({ code: 'rate_limited' })
    expect([runner.runs, runner.checks, calls.verify]).toEqual([2, 2, 1])
  })

  it('credits a settled 1 MiB call the points of its 402 of the same size: the x402 probe and the paid call cost nothing net', async () => {
    const { gate, pay } = fakeGate()
    const { quota, log } = recordingQuota()
    const text = JSON.stringify({ text: 'a', pad: 'x'.repeat(1_000_000) })
    const body = new TextEncoder().encode(text)
    const points = Math.ceil(body.length / 65536)
    expect(points).toBe(16)
    // The echo tool refuses `pad`: a schema of its own that accepts it, for this test.
    const padded = {
      ...echoTool,
      input: z.object({ text: z.string().max(10), pad: z.string() }).strict(),
    } as unknown as ToolDefinition
    await gate.execute({
      tool: padded,
      transport: 'http',
      source: { body },
      payment: { value: await pay() },
      resource: { url: 'http://svc/echo' },
      quota,
    })
    // The 402 of this body cost 16 points (1 where it arrived, 15 before its free check).
    expect(log).toEqual(['charge 16', 'refund 16', 'refund 17'])
  })

  it('takes the points given back at verify again when the call does not settle: a tool error, a settlement refused', async () => {
    const runner = inlineRunner()
    const { gate, pay } = fakeGate(
      {
        settle: async (p) => {
          const nonce = fakeNonceOf(p)
          return nonce === 'refused'
            ? {
                success: false,
                errorReason: 'insufficient_funds',
                transaction: '',
                network: 'eip155:8453',
              }
            : { success: true, transaction: '0xtx', network: 'eip155:8453', payer: '0xPAYER' }
        },
      },
      undefined,
      { runner },
    )
    const { quota, log } = recordingQuota()
    const call = async (input: unknown, nonce: string) =>
      rejection(
        gate.execute({
          tool: echoTool as ToolDefinition,
          transport: 'http',
          ...bodyOf(input),
          payment: { value: await pay(0, nonce) },
          resource: { url: 'http://svc/echo' },
          quota,
        }),
      )
    expect(await call({ text: 'boom' }, 'tool-error')).toMatchObject({ code: 'invalid_unicode' })
    expect(log).toEqual(['charge 1', 'refund 1', 'takeBack 1'])
    log.length = 0
    expect(await call({ text: 'a' }, 'refused')).toMatchObject({ code: 'settlement_failed' })
    expect(log).toEqual(['charge 1', 'refund 1', 'takeBack 1'])
  })

  it('never gives back the points of a payment that fails verify', async () => {
    const { gate, pay, calls } = fakeGate({
      verify: async () => ({
        isValid: false,
        invalidReason: 'insufficient_funds',
        payer: '0xPAYER',
      }),
    })
    const { quota, log } = recordingQuota()
    const error = await rejection(
      gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'http',
        ...bodyOf({ text: 'a' }),
        payment: { value: await pay() },
        resource: { url: 'http://svc/echo' },
        quota,
      }),
    )
    expect(error).toMatchObject({ code: 'payment_verification_failed' })
    expect([log, calls.verify, calls.settle]).toEqual([['charge 1'], 1, 0])
  })

  it('charges a paid body a point per started 64 KiB before reading it', async () => {
    const { gate, pay } = fakeGate()
    const { quota, log } = recordingQuota()
    const body = new TextEncoder().encode(JSON.stringify({ text: 'a', pad: 'x'.repeat(200_000) }))
    const error = await rejection(
      gate.execute({
        tool: echoTool as ToolDefinition,
        transport: 'http',
        source: { body },
        payment: { value: await pay() },
        resource: { url: 'http://svc/echo' },
        quota,
      }),
    )
    expect(error).toBeInstanceOf(InvalidInputError)
    expect(log).toEqual([`charge ${Math.ceil(body.length / 65536)}`])
  })

  it('never compiles or runs a schema the client echoes: a hostile one is refused, ours is read by our own rules', async () => {
    const { call, calls, pay } = setup()
    const hostile = {
      'payment-identifier': {
        info: { required: false, id: `${'a'.repeat(40)}-` },
        schema: { type: 'object', properties: { id: { type: 'string', pattern: '^(a+)+$' } } },
      },
    }
    const started = performance.now()
    const e = (await rejection(
      call({ text: 'a' }, await pay(0, 'n1', '1000', hostile)),
    )) as PaymentRequiredError
    expect(e.code).toBe('invalid_payment')
    expect(e.message).toBe(
      `The payment's payment-identifier extension is invalid: its "schema" differs from the one offered; echo it unchanged`,
    )
    // The same id under our own schema is well formed.
    const ours = await call({ text: 'a' }, await pay(0, 'n2', '1000', withId(`${'a'.repeat(40)}-`)))
    expect(ours.result.value()).toEqual({ upper: 'A' })
    expect(calls.verify).toBe(1)
    // An Ajv run of ^(a+)+$ on 40 a and "-" would take hours; our checks take microseconds.
    expect(performance.now() - started).toBeLessThan(30_000)
  })

  it('refuses a malformed payment-identifier id before verify', async () => {
    const { call, calls, pay } = setup()
    const e = (await rejection(
      call({ text: 'a' }, await pay(0, 'n1', '1000', withId('short'))),
    )) as PaymentRequiredError
    expect(e.code).toBe('invalid_payment')
    expect(e.message).toMatch(/^The payment's payment-identifier extension is invalid: /)
    expect(calls.verify).toBe(0)
  })

  it('lets a retry run again after a call that failed before settlement', async () => {
    let fail = true
    const runner = inlineRunner({
      run: async (tool, input, now) => {
        if (fail) {
          fail = false
          throw new ToolError('tool_failed', 'boom')
        }
        return tool.run(input, { nowSeconds: () => now })
      },
    })
    const { call, calls, pay } = setup({}, undefined, { runner })
    const payment = await pay(0, 'n1', '1000', withId(id))
    expect(await rejection(call({ text: 'a' }, payment))).toBeInstanceOf(ToolError)
    const ok = await call({ text: 'a' }, payment)
    expect(ok.replayed).toBeUndefined()
    expect(calls).toEqual({ supported: 1, verify: 2, settle: 1 })
  })

  it('fails closed before verify when the guard is unreachable', async () => {
    const guard = createMemoryGuard()
    guard.claim = async () => {
      throw new GuardUnavailableError()
    }
    const { call, calls, events, pay } = setup({}, undefined, { guard })
    const e = await rejection(call({ text: 'a' }, await pay()))
    expect(e).toBeInstanceOf(GuardUnavailableError)
    expect(calls).toEqual({ supported: 1, verify: 0, settle: 0 })
    expect(events).toEqual([])
  })
})

describe('payment gate: a payment is answered at most 1 + REPLAY_LIMIT times in all', () => {
  it('answers a copy of a settled authorization signed differently 409 payment_conflict, without asking the facilitator', async () => {
    const { call, calls, pay } = setup()
    const payment = await pay()
    await call({ text: 'a' }, payment)
    const payload = payment.payload as { signature: string }
    const resigned = { ...payment, payload: { ...payload, signature: `0x${'00'.repeat(65)}` } }
    const e = await rejection(call({ text: 'a' }, resigned))
    expect(e).toBeInstanceOf(PaymentConflictError)
    expect(e).toMatchObject({
      code: 'payment_conflict',
      message:
        'This authorization was already presented with another signature; nothing was charged. Sign a new payment',
    })
    expect(calls).toMatchObject({ verify: 1, settle: 1 })
  })

  it('keeps a settled Solana payment on record for as long as its transaction could land, past the window', async () => {
    let t = 1_000_000
    const guard = createMemoryGuard(() => t)
    const { call, calls, pay } = setup({}, undefined, { guard })
    const payment = await pay(1, 'sol')
    await call({ text: 'a' }, payment)
    for (let i = 0; i < 3; i++) expect((await call({ text: 'a' }, payment)).replayed).toBe(true)
    // The guard's window passes: on a chain whose blockhashes never expire the transaction would
    // land again; its record stays until then.
    t += DUPLICATE_WINDOW_MS + 5_000
    const later = (await rejection(call({ text: 'a' }, payment))) as PaymentRequiredError
    expect(later.code).toBe('duplicate_settlement')
    t = 1_000_000 + (SOLANA_TRANSACTION_LIFETIME_SECONDS + CLOCK_SKEW_SECONDS) * 1000 - 1000
    expect(((await rejection(call({ text: 'a' }, payment))) as PaymentRequiredError).code).toBe(
      'duplicate_settlement',
    )
    expect(calls).toMatchObject({ verify: 1, settle: 1 })
  })

  it('refuses an EVM authorization valid for longer than the offer allows, or for another amount, before verify', async () => {
    const { call, calls, pay } = setup()
    const withAuthorization = async (change: Record<string, string>) => {
      const payment = await pay(0, JSON.stringify(change))
      const payload = payment.payload as { authorization: Record<string, string> }
      return {
        ...payment,
        payload: { ...payload, authorization: { ...payload.authorization, ...change } },
      }
    }
    const year = String(Math.floor(Date.now() / 1000) + 365 * 86400)
    const long = (await rejection(
      call({ text: 'a' }, await withAuthorization({ validBefore: year })),
    )) as PaymentRequiredError
    expect(long.code).toBe('invalid_payment')
    expect(long.message).toMatch(
      /^The payment is refused: the authorization is valid for 3153\d{4} s; the offer allows at most 120 s \(maxTimeoutSeconds\)$/,
    )
    const junk = (await rejection(
      call({ text: 'a' }, await withAuthorization({ value: 'x' })),
    )) as PaymentRequiredError
    expect(junk.message).toBe(
      'The payment is not a valid x402 v2 PaymentPayload of scheme exact: expected an unsigned integer in decimal digits at payload.authorization.value',
    )
    const less = (await rejection(
      call({ text: 'a' }, await withAuthorization({ value: '1' })),
    )) as PaymentRequiredError
    expect(less.message).toBe(
      'The payment is refused: authorization.value "1" is not the price "1000"',
    )
    expect(calls.verify).toBe(0)
  })
})

describe('payment gate and the tool runner', () => {
  it('refuses a call when the runner is full, before verify, and accepts the same payment later', async () => {
    const runner = inlineRunner({ capacity: 0 })
    const { call, calls, events, pay } = setup({}, undefined, { runner })
    const payment = await pay()
    const error = await rejection(call({ text: 'a' }, payment))
    expect(error).toBeInstanceOf(OverloadedError)
    expect(error).toMatchObject({ retryAfterSeconds: 2, stage: 'admission' })
    expect(calls).toEqual({ supported: 1, verify: 0, settle: 0 })
    expect(events).toEqual([])
    expect(runner.runs).toBe(0)
    runner.capacity = 1
    expect((await call({ text: 'a' }, payment)).result.value()).toEqual({ upper: 'A' })
    expect(runner.status().running).toBe(0)
  })

  it('never settles a verified call that waited past its queue deadline, and frees the payment', async () => {
    let refusals = 1
    const runner = inlineRunner({
      run: async (tool, input, now) => {
        if (refusals-- > 0) throw new OverloadedError(2, 'queue')
        return tool.run(input, { nowSeconds: () => now })
      },
    })
    const { call, calls, events, pay } = setup({}, undefined, { runner })
    const payment = await pay()
    const error = await rejection(call({ text: 'a' }, payment))
    expect(error).toBeInstanceOf(OverloadedError)
    expect((error as Error).message).toBe(
      "Every tool worker stayed busy past this call's queue deadline; it was not run and nothing was charged. Retry shortly",
    )
    expect(calls.settle).toBe(0)
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
    expect((await call({ text: 'a' }, payment)).result.value()).toEqual({ upper: 'A' })
    expect(calls.settle).toBe(1)
  })

  it('checks the input before it asks the runner for room', async () => {
    const runner = inlineRunner({ capacity: 0 })
    const { call, pay } = setup({}, undefined, { runner })
    expect(await rejection(call({ text: 1 }, await pay()))).toBeInstanceOf(InvalidInputError)
  })

  it('never settles a call that ran out of its budget, and frees the payment and the place', async () => {
    let timeouts = 1
    const runner = inlineRunner({
      run: async (tool, input, now) => {
        if (timeouts-- > 0) throw new ToolTimeoutError(2000)
        return tool.run(input, { nowSeconds: () => now })
      },
    })
    const { call, calls, events, pay } = setup({}, undefined, { runner })
    const payment = await pay()
    const error = await rejection(call({ text: 'a' }, payment))
    expect(error).toBeInstanceOf(ToolTimeoutError)
    expect(calls.settle).toBe(0)
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
    expect(runner.status().running).toBe(0)
    expect((await call({ text: 'a' }, payment)).result.value()).toEqual({ upper: 'A' })
  })

  it('runs nothing for a call whose payment fails to verify', async () => {
    const runner = inlineRunner({ capacity: 1 })
    const { call, pay } = setup(
      { verify: async () => ({ isValid: false, invalidReason: 'insufficient_funds' }) },
      undefined,
      { runner },
    )
    expect(await rejection(call({ text: 'a' }, await pay()))).toBeInstanceOf(PaymentRequiredError)
    expect(runner.runs).toBe(0)
    expect(runner.status().running).toBe(0)
  })

  it('reads the clock on its own thread and hands the runner the seconds', async () => {
    const seen: number[] = []
    const runner = inlineRunner({
      run: async (tool, input, now) => {
        seen.push(now)
        return tool.run(input, { nowSeconds: () => now })
      },
    })
    const { call, pay } = setup({}, undefined, { runner, env: { nowSeconds: () => 1_700_000_000 } })
    await call({ text: 'a' }, await pay())
    expect(seen).toEqual([1_700_000_000])
  })

  it('starts no settlement once shutdown leaves too little time, and charges nothing', async () => {
    const { call, calls, events, pay } = setup({}, undefined, { canSettle: () => false })
    const payment = await pay()
    const error = await rejection(call({ text: 'a' }, payment))
    expect(error).toBeInstanceOf(ShuttingDownError)
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 0 })
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
  })
})
