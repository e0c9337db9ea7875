import type { CallToolResult } from '@modelcontextprotocol/client'
import type { PaymentPayload } from '@x402/core/types'
import { beforeEach, describe, expect, it } from 'vitest'
import { type BridgeParts, mirrorTool, SETTLEMENT_META_KEY } from './bridge.js'
import type { Caps } from './config.js'
import type { RailId } from './rails.js'
import { SPEND_TOOL } from './spend-tool.js'
import {
  claimsOf,
  type FakeRemote,
  fakeRemote,
  listedTool,
  receipt,
  settled,
  settledWith,
  signReceipt,
} from './test-support/fake-remote.js'
import { BASE, baseOffer, SOL, solanaOffer } from './test-support/offers.js'
import { testBridge } from './test-support/test-bridge.js'
import { UnknownToolError } from './unknown-tool.js'

const tools = () => [listedTool('payload_hash', '1000'), listedTool('payload_pipeline', '3000')]

let remote: FakeRemote
let logs: string[]
let signatures: number

/** A bridge over the fake service with a real x402 wallet (EVM signing is offline). */
const bridgeWith = (
  caps: Partial<Caps> = {},
  preferredRail?: RailId,
  over: Partial<BridgeParts> = {},
) =>
  testBridge({
    remote,
    caps,
    preferredRail,
    over,
    log: (m) => logs.push(m),
    onSign: () => {
      signatures += 1
    },
  })

beforeEach(() => {
  remote = fakeRemote(tools())
  logs = []
  signatures = 0
})

const failure = (result: CallToolResult) =>
  result.structuredContent as { ok: boolean; code: string; error: string }
const signedLines = () => logs.filter((l) => l.startsWith('signed payment for '))

describe('listing', () => {
  it('mirrors the service tools, schemas and _meta unchanged, and adds the spend tool', async () => {
    const { bridge } = await bridgeWith()
    const { tools: listed, complete } = await bridge.listTools()
    expect(complete).toBe(true)
    expect(listed.map((t) => t.name)).toEqual(['payload_hash', 'payload_pipeline', SPEND_TOOL])
    const [hash] = listed
    const original = tools()[0]
    expect(hash?.inputSchema).toEqual(original?.inputSchema)
    expect(hash?.outputSchema).toEqual(original?.outputSchema)
    expect(hash?._meta).toEqual(original?._meta)
    expect(hash?.description).toBe(
      'The payload_hash tool. Price: 0.001 USDC per call. Through payload-tools-mcp, call it ' +
        'once with its arguments: the bridge pays the price from your wallet, within your spend ' +
        'caps (see payload_tools_spend).',
    )
  })

  it('adds the price to a description that lacks it', () => {
    const tool = { ...listedTool('payload_x', '3000'), description: 'X.' }
    expect(mirrorTool(tool).description).toMatch(/^X\. Price: 0\.003 USDC per call\. Through/)
  })

  it('lists only the spend tool while the service is unreachable, and recovers', async () => {
    const { bridge } = await bridgeWith()
    remote.down = new Error('fetch failed')
    const down = await bridge.listTools()
    expect(down).toEqual({
      tools: [expect.objectContaining({ name: SPEND_TOOL })],
      complete: false,
    })
    expect(logs).toEqual(["cannot list the service's tools: fetch failed"])
    remote.down = undefined
    expect((await bridge.listTools()).tools).toHaveLength(3)
  })
})

describe('a paid call', () => {
  it('signs the chosen rail with the official client, retries with _meta, and returns the result unchanged plus the settlement', async () => {
    const { bridge, ledger } = await bridgeWith()
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(remote.unpaidCalls).toBe(1)
    expect(remote.payments).toHaveLength(1)
    const payment = remote.payments[0] as PaymentPayload
    expect(payment.accepted).toEqual(baseOffer('1000'))
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent).toEqual({ ok: true, result: { echoed: true } })
    expect(result.content).toEqual([
      { type: 'text', text: '{"ok":true,"result":{"echoed":true}}' },
      { type: 'text', text: 'Paid 0.001 USDC on Base (eip155:8453), transaction 0xfeed.' },
    ])
    expect(result._meta).toEqual({
      'x402/payment-response': {
        ...receipt(payment),
        extensions: { 'delivery-receipt': { info: { receipt: expect.any(String) } } },
      },
      [SETTLEMENT_META_KEY]: {
        network: BASE,
        transaction: '0xfeed',
        amount: '1000',
        display: '0.001 USDC',
      },
    })
    expect(signedLines()).toEqual(['signed payment for payload_hash on eip155:8453 (0.001 USDC)'])
    expect(ledger.snapshot()).toMatchObject({ session: { [BASE]: 1000n }, calls: 1 })
  })

  it('passes a result that needs no payment through unchanged, signing nothing', async () => {
    const { bridge } = await bridgeWith()
    const free = { content: [{ type: 'text' as const, text: 'free' }] }
    remote.callTool = async () => free
    expect(await bridge.callTool('payload_hash', {})).toBe(free)
    expect(signatures).toBe(0)
  })

  it('passes a refusal that is not about payment through unchanged', async () => {
    const { bridge } = await bridgeWith()
    const refusal: CallToolResult = {
      isError: true,
      content: [{ type: 'text', text: 'x' }],
      structuredContent: { ok: false, error: 'down', code: 'facilitator_unavailable' },
    }
    remote.callTool = async () => refusal
    expect(await bridge.callTool('payload_hash', {})).toBe(refusal)
    expect(signatures).toBe(0)
  })

  it('throws InvalidParams for a tool the service does not list, naming the tools', async () => {
    const { bridge } = await bridgeWith()
    const error = await bridge.callTool('payload_pipelin', {}).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(UnknownToolError)
    expect(error).toMatchObject({
      code: -32602,
      message:
        'Unknown tool: payload_pipelin. Did you mean payload_pipeline? The tools are payload_hash, payload_pipeline, payload_tools_spend (tools/list describes them).',
      data: {
        tools: ['payload_hash', 'payload_pipeline', 'payload_tools_spend'],
        suggestion: 'payload_pipeline',
      },
    })
    expect(remote.unpaidCalls).toBe(0)
  })
})

describe('refusals before signing', () => {
  it("refuses arguments the service's free input check rejects", async () => {
    const { bridge } = await bridgeWith()
    remote.inputCheck = { valid: false, errors: [{ path: '/operations', message: 'too small' }] }
    const result = await bridge.callTool('payload_pipeline', { operations: [] })
    expect(result.isError).toBe(true)
    expect(failure(result)).toMatchObject({
      ok: false,
      code: 'invalid_request',
      error:
        'Invalid arguments for payload_pipeline: /operations: too small. Nothing was signed or ' +
        'charged.',
    })
    expect(result._meta?.['payload-tools/failure']).toEqual(result.structuredContent)
    expect(signatures).toBe(0)
  })

  it('refuses a 402 whose amount differs from the listed price', async () => {
    const { bridge, ledger } = await bridgeWith()
    remote.accepts.set('payload_hash', [baseOffer('2000')])
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(failure(result)).toEqual({
      ok: false,
      code: 'price_mismatch',
      error:
        'payload_hash asks 0.002 USDC on eip155:8453 but tools/list advertised 0.001 USDC. ' +
        'Nothing was signed.',
      amount: '2000',
      listed: '1000',
      network: BASE,
    })
    expect(signatures).toBe(0)
    expect(remote.payments).toEqual([])
    expect(ledger.snapshot().session).toEqual({})
  })

  it('refuses to pay a tool listed without a price', async () => {
    remote.tools.push(listedTool('payload_free', undefined))
    const { bridge } = await bridgeWith()
    const result = await bridge.callTool('payload_free', {})
    expect(failure(result).code).toBe('price_unlisted')
    expect(signatures).toBe(0)
  })

  it('refuses a 402 offering no rail the wallet can pay', async () => {
    const { bridge } = await bridgeWith()
    remote.accepts.set('payload_hash', [solanaOffer('1000')])
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result)).toMatchObject({
      code: 'no_payable_rail',
      error:
        `The service offers Solana (${SOL}); this wallet pays USDC with scheme exact on Base ` +
        'only. To pay on Solana, set PAYER_SOLANA_SECRET_KEY. Nothing was signed.',
    })
    expect(signatures).toBe(0)
  })

  it('refuses a call above MAX_USDC_PER_CALL, naming the cap and the amount', async () => {
    const { bridge } = await bridgeWith({ perCall: 2000n })
    const result = await bridge.callTool('payload_pipeline', {})
    expect(result.isError).toBe(true)
    expect(failure(result)).toEqual({
      ok: false,
      code: 'spend_cap_exceeded',
      error: 'MAX_USDC_PER_CALL (0.002 USDC) refuses this call of 0.003 USDC. Nothing was signed.',
      cap: 'MAX_USDC_PER_CALL',
      amount: '3000',
      limit: '2000',
      spent: '0',
    })
    expect(result.content).toEqual([{ type: 'text', text: failure(result).error }])
    expect(signatures).toBe(0)
  })

  it('refuses the third call under a 0.002 USDC session cap', async () => {
    const { bridge } = await bridgeWith({ perSession: 2000n })
    expect((await bridge.callTool('payload_hash', {})).isError).toBeUndefined()
    expect((await bridge.callTool('payload_hash', {})).isError).toBeUndefined()
    const third = await bridge.callTool('payload_hash', {})
    expect(failure(third)).toMatchObject({
      code: 'spend_cap_exceeded',
      cap: 'MAX_USDC_PER_SESSION',
      error:
        'MAX_USDC_PER_SESSION (0.002 USDC) refuses this call of 0.001 USDC; 0.002 USDC already ' +
        'spent this session. Nothing was signed.',
    })
    expect(signatures).toBe(2)
    expect(remote.payments).toHaveLength(2)
  })

  it('never lets concurrent calls together pass a cap: the second is refused while the first is in flight', async () => {
    const { bridge, ledger } = await bridgeWith({ perSession: 4000n })
    let finish: () => void = () => {}
    const gate = new Promise<void>((resolve) => {
      finish = resolve
    })
    remote.paidAnswer = async (payment, name, args) => {
      await gate
      return settled(payment, name, args)
    }
    const first = bridge.callTool('payload_pipeline', {})
    const second = bridge.callTool('payload_pipeline', {})
    const third = bridge.callTool('payload_hash', {})
    const refused = await second
    expect(failure(refused)).toMatchObject({ code: 'spend_cap_exceeded', spent: '3000' })
    finish()
    expect((await first).isError).toBeUndefined()
    expect((await third).isError).toBeUndefined()
    expect(signatures).toBe(2)
    expect(ledger.snapshot().session).toEqual({ [BASE]: 4000n })
  })

  it('reports a signing failure and releases the reservation', async () => {
    const { bridge, ledger } = await bridgeWith({ perSession: 1000n })
    remote.accepts.set('payload_hash', [baseOffer('1000', { extra: {} })])
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result).code).toBe('signing_failed')
    expect(failure(result).error).toMatch(
      /^Could not sign the payment for payload_hash on eip155:8453: .+\. Nothing was sent or charged\.$/,
    )
    expect(remote.payments).toEqual([])
    remote.accepts.clear()
    expect((await bridge.callTool('payload_hash', {})).isError).toBeUndefined()
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
  })

  it('reports an unreachable service, signing nothing', async () => {
    const { bridge } = await bridgeWith()
    remote.down = new Error('connect ECONNREFUSED 127.0.0.1:9')
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result)).toMatchObject({
      code: 'service_unreachable',
      error:
        'The Payload Tools service is unreachable (connect ECONNREFUSED 127.0.0.1:9). Check ' +
        'PAYLOAD_TOOLS_URL and your network. Nothing was signed or charged.',
    })
    expect(signatures).toBe(0)
  })
})

describe('after signing', () => {
  it('does not count a call the service refused (facilitator_unavailable), and says so', async () => {
    const { bridge, ledger } = await bridgeWith({ perSession: 1000n })
    const envelope = {
      ok: false,
      error: 'Payment facilitator is unavailable; nothing was run or charged',
      code: 'facilitator_unavailable',
    }
    remote.paidAnswer = async () => ({
      isError: true,
      content: [{ type: 'text', text: JSON.stringify(envelope) }],
      structuredContent: envelope,
      _meta: { 'payload-tools/failure': envelope },
    })
    const result = await bridge.callTool('payload_hash', {})
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual(envelope)
    expect(result.content?.[1]).toEqual({
      type: 'text',
      text:
        'The service refused the paid call (facilitator_unavailable) and reports nothing ' +
        'charged; it does not count against the spend caps.',
    })
    expect(ledger.snapshot().session).toEqual({})
    expect(signatures).toBe(1)
  })

  it('does not count a failed settlement', async () => {
    const { bridge, ledger } = await bridgeWith()
    remote.paidAnswer = async (payment) => ({
      isError: true,
      content: [{ type: 'text', text: '{}' }],
      structuredContent: { x402Version: 2, accepts: [] },
      _meta: {
        'x402/payment-response': receipt(payment, false),
        'payload-tools/failure': {
          ok: false,
          error: 'Settlement failed',
          code: 'settlement_failed',
        },
      },
    })
    const result = await bridge.callTool('payload_hash', {})
    expect(result.isError).toBe(true)
    expect(result.content?.at(-1)).toMatchObject({
      text: expect.stringMatching(/\(settlement_failed\)/),
    })
    expect(ledger.snapshot()).toMatchObject({ session: {}, calls: 0 })
  })

  it('counts a paid call that got no answer, since it may have settled', async () => {
    const { bridge, ledger } = await bridgeWith()
    remote.paidAnswer = async () => {
      throw new Error('socket hang up')
    }
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result)).toMatchObject({
      code: 'payment_outcome_unknown',
      error:
        'The service did not answer the paid call of payload_hash (socket hang up). The payment ' +
        'of 0.001 USDC on eip155:8453 may have been settled; it counts against the spend caps. ' +
        'Check the wallet before calling again.',
    })
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
  })
})

describe('the spend tool', () => {
  it('reports the session per rail and the caps, locally', async () => {
    const { bridge } = await bridgeWith({ perSession: 5000n })
    await bridge.callTool('payload_pipeline', {})
    const calls = remote.unpaidCalls
    const result = await bridge.callTool(SPEND_TOOL, {})
    expect(remote.unpaidCalls).toBe(calls)
    expect(result.structuredContent).toMatchObject({
      currency: 'USDC',
      session: { total: '0.003', calls: 1 },
      today: { total: '0.003' },
      rails: [{ rail: 'base', network: BASE, session: '0.003', today: '0.003' }],
      caps: { per_call: '0.01', per_session: '0.005', per_day: null },
      remaining: { session: '0.002', today: null },
    })
    expect(result.content?.[0]).toMatchObject({
      text: expect.stringMatching(
        /^Spent 0\.003 USDC this session in 1 paid call \(Base 0\.003\); 0\.003 USDC today \(UTC \d{4}-\d{2}-\d{2}: Base 0\.003\)\. Caps: 0\.01 USDC per call, 0\.005 per session \(0\.002 left\), no daily cap\.$/,
      ),
    })
  })
})

describe('the delivery receipt of a paid result', () => {
  /** A paid answer whose receipt or result is changed after the service signed it. */
  const tampered = async (
    change: (claims: Record<string, unknown>) => Record<string, unknown>,
    options: { result?: unknown; sign?: typeof signReceipt } = {},
  ) => {
    remote.paidAnswer = async (payment, name, args) => {
      const claims = claimsOf(payment, name, args, { echoed: true })
      const jws = await (options.sign ?? signReceipt)(change(claims))
      return settledWith(payment, options.result ?? { echoed: true }, jws)
    }
  }

  it('accepts a receipt that matches the arguments (schema defaults applied), result and payment', async () => {
    const { bridge } = await bridgeWith()
    // The service applies the listed default algorithm: the receipt is of {input, algorithm}.
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(result.isError).toBeUndefined()
  })

  it('refuses a receipt with one claim changed (bad_signature): the result is withheld, the payment counts', async () => {
    const { bridge, ledger } = await bridgeWith()
    remote.paidAnswer = async (payment, name, args) => {
      const answer = await settled(payment, name, args)
      const response = answer._meta['x402/payment-response'] as unknown as {
        extensions: { 'delivery-receipt': { info: { receipt: string } } }
      }
      const info = response.extensions['delivery-receipt'].info
      const [header, payload, signature] = info.receipt.split('.')
      const claims = JSON.parse(Buffer.from(payload as string, 'base64url').toString())
      const forged = Buffer.from(JSON.stringify({ ...claims, amount: '1' })).toString('base64url')
      info.receipt = `${header}.${forged}.${signature}`
      return answer
    }
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(result.isError).toBe(true)
    expect(failure(result)).toMatchObject({
      code: 'receipt_invalid',
      reason: 'bad_signature',
      transaction: '0xfeed',
      network: BASE,
      error:
        'The service settled 0.001 USDC on eip155:8453 (transaction 0xfeed) for payload_hash, but ' +
        'its delivery receipt is refused: its signature does not match its content: the result ' +
        'is withheld. The payment counts against the spend caps; keep this receipt to dispute it.',
    })
    expect(JSON.stringify(result)).not.toContain('echoed')
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
    expect(logs).toContain(
      'paid call of payload_hash withheld (receipt_invalid): its delivery receipt is refused: its signature does not match its content',
    )
  })

  it('refuses a result changed by one byte: receipt_mismatch on result_sha256', async () => {
    const { bridge } = await bridgeWith()
    await tampered((claims) => claims, { result: { echoed: false } })
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(failure(result)).toMatchObject({
      code: 'receipt_mismatch',
      mismatched: ['result_sha256'],
      receipt: expect.any(String),
    })
  })

  it('refuses a receipt for other arguments, another tool or another payment', async () => {
    const { bridge } = await bridgeWith()
    await tampered((claims) => ({
      ...claims,
      input_sha256: '0'.repeat(64),
      tool: 'hmac',
      transaction: '0xother',
      pay_to: '0xsomeoneelse',
    }))
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(failure(result)).toMatchObject({
      code: 'receipt_mismatch',
      mismatched: ['input_sha256', 'transaction', 'pay_to', 'tool'],
    })
  })

  it('refuses a receipt signed by a key not in the JWKS: receipt_invalid unknown_key', async () => {
    const { bridge } = await bridgeWith()
    const { generateKeyPairSync } = await import('node:crypto')
    const foreign = generateKeyPairSync('ed25519').privateKey
    await tampered((claims) => claims, { sign: (claims) => signReceipt(claims, foreign, 'other') })
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(failure(result)).toMatchObject({ code: 'receipt_invalid', reason: 'unknown_key' })
  })

  it('refuses a paid result without a receipt: receipt_missing', async () => {
    const { bridge, ledger } = await bridgeWith()
    remote.paidAnswer = async (payment) => settledWith(payment, { echoed: true })
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(failure(result)).toMatchObject({ code: 'receipt_missing', transaction: '0xfeed' })
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
  })
})

describe('a paid call answered settlement_unknown', () => {
  /** The service's isError result for `settlement_unknown` (src/mcp/results.ts of the service). */
  const unknownResult = (extra: Record<string, unknown> = {}): CallToolResult => {
    const envelope = {
      ok: false,
      error:
        'The tool ran, but the settlement outcome is unknown: the payment may have moved. Retry ' +
        'the same payment for the same input within 120 s to get the result once it settles',
      code: 'settlement_unknown',
      request_id: 'req-1',
      ...extra,
    }
    return {
      isError: true,
      content: [{ type: 'text', text: JSON.stringify(envelope) }],
      structuredContent: envelope,
      _meta: { 'payload-tools/failure': envelope },
    }
  }
  let waits: number[]
  const retrying = (over: Partial<BridgeParts['settlementRetry']> = {}) =>
    bridgeWith({}, undefined, {
      settlementRetry: {
        ...over,
        sleep: async (ms) => {
          waits.push(ms)
        },
      },
    })
  /** The fake answers the paid calls with `answers` in turn (the last one repeated). */
  const answering = (...answers: ((p: PaymentPayload) => Promise<CallToolResult>)[]) => {
    let n = 0
    remote.paidAnswer = (payment) => {
      const answer = answers[Math.min(n, answers.length - 1)] as (
        p: PaymentPayload,
      ) => Promise<CallToolResult>
      n += 1
      return answer(payment)
    }
  }
  beforeEach(() => {
    waits = []
  })

  it('resends the same payment, without signing again, and returns the result', async () => {
    answering(
      async () => unknownResult(),
      async () => unknownResult({ retry_after: 2 }),
      (p) => settled(p),
    )
    const { bridge, ledger } = await retrying()
    const result = await bridge.callTool('payload_hash', {})
    expect(result.isError).toBeFalsy()
    expect(result._meta?.[SETTLEMENT_META_KEY]).toMatchObject({ amount: '1000' })
    expect(signatures).toBe(1)
    expect(remote.payments).toHaveLength(3)
    expect(remote.payments[1]).toBe(remote.payments[0])
    expect(remote.payments[2]).toBe(remote.payments[0])
    // No retry_after: 5 s; then the envelope's 2 s.
    expect(waits).toEqual([5000, 2000])
    expect(logs.filter((l) => l.includes('resending the same payment'))).toEqual([
      'paid call of payload_hash: settlement_unknown; resending the same payment in 5 s (retry 1 of 3)',
      'paid call of payload_hash: settlement_unknown; resending the same payment in 2 s (retry 2 of 3)',
    ])
    // Counted once.
    expect(ledger.snapshot()).toMatchObject({ session: { [BASE]: 1000n }, calls: 1 })
  })

  it('gives up after three resends, the waits bounded, the payment counted', async () => {
    answering(async () => unknownResult({ retry_after: 3600 }))
    const { bridge, ledger } = await retrying()
    const result = await bridge.callTool('payload_hash', {})
    expect(result.isError).toBe(true)
    expect(failure(result)).toMatchObject({ code: 'settlement_unknown', resent: 3 })
    expect(failure(result).error).toBe(
      'The service ran payload_hash, but the settlement of its 0.001 USDC payment on ' +
        `${BASE} is still unknown after 3 resends of the same payment: the payment may have ` +
        'moved; it counts against the spend caps. Retrying the same payment later is safe (the ' +
        'service never charges one payment twice), but calling the tool again signs a new ' +
        'payment, which would be charged again: check the wallet first.',
    )
    expect(signatures).toBe(1)
    expect(remote.payments).toHaveLength(4)
    expect(new Set(remote.payments).size).toBe(1)
    expect(waits).toEqual([10_000, 10_000, 10_000])
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
    // No payment contents in the log.
    const signature = String((remote.payments[0] as PaymentPayload).payload.signature)
    expect(signature).toMatch(/^0x[0-9a-f]{130}$/)
    expect(logs.join('\n')).not.toContain(signature)
  })

  it('counts the payment when the resend is refused (it may have moved)', async () => {
    answering(
      async () => unknownResult(),
      async () => ({
        isError: true,
        content: [{ type: 'text', text: 'settlement failed' }],
        _meta: { 'payload-tools/failure': { ok: false, code: 'settlement_failed', error: 'x' } },
      }),
    )
    const { bridge, ledger } = await retrying({ attempts: 2 })
    const result = await bridge.callTool('payload_hash', {})
    expect(result.isError).toBe(true)
    expect(remote.payments).toHaveLength(2)
    expect(JSON.stringify(result.content)).toContain(
      'The service refused the resent payment (settlement_failed) after the outcome of its first ' +
        'settlement was unknown: the payment may have moved, so it counts against the spend caps.',
    )
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
  })

  it('gives up with settlement_unknown when a resend gets no answer', async () => {
    answering(
      async () => unknownResult(),
      async () => Promise.reject(new Error('fetch failed')),
    )
    const { bridge, ledger } = await retrying()
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result)).toMatchObject({ code: 'settlement_unknown', resent: 1 })
    expect(failure(result).error).toContain('(the last got no answer: fetch failed)')
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
  })
})
