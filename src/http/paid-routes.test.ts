import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
} from '@x402/core/http'
import { describe, expect, it } from 'vitest'
import {
  echoTool,
  type FacilitatorScript,
  fakeGate,
  inlineRunner,
} from '../../test/helpers/fakes.js'
import { json } from '../../test/helpers/json.js'
import { ToolTimeoutError } from '../runner/errors.js'
import type { ToolDefinition } from '../tools/types.js'
import { createApp, MAX_BODY_BYTES } from './app.js'

// Unit tests of the HTTP adapter over a scripted facilitator (test/helpers/fakes.ts).

/** The caller's request id every `post` sends: each failure envelope carries it back. */
const REQUEST_ID = 'req-echo-1'
/** A request id the service made (UUID v4). */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

function setup(script: FacilitatorScript = {}, extra: Parameters<typeof fakeGate>[2] = {}) {
  const fake = fakeGate(script, undefined, extra)
  const app = createApp({
    gate: fake.gate,
    tools: [echoTool as ToolDefinition],
    publicBaseUrl: 'https://tools.example',
  })
  const post = (body: string, headers: Record<string, string> = {}) =>
    app.request('/echo', {
      method: 'POST',
      body,
      headers: { 'Content-Type': 'application/json', 'X-Request-Id': REQUEST_ID, ...headers },
    })
  const paid = async (body: string, nonce = 'n1') =>
    post(body, { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(await fake.pay(0, nonce)) })
  return { ...fake, app, post, paid }
}

describe('paid HTTP routes', () => {
  it('answers the 402, the 400 and the 200 with the security and CORS headers of every response', async () => {
    const { app, post, paid } = setup()
    const common = [...(await app.request('/health')).headers.entries()].filter(
      ([name]) =>
        !['content-type', 'content-length', 'cache-control', 'x-request-id'].includes(name),
    )
    expect(common.map(([name]) => name)).toEqual(
      expect.arrayContaining([
        'access-control-allow-origin',
        'access-control-expose-headers',
        'content-security-policy',
        'x-content-type-options',
        'x-frame-options',
      ]),
    )
    for (const res of [
      await post(''),
      await paid('{"text":1}'),
      await paid('{"text":"a"}', 'n2'),
    ]) {
      expect([res.status, Object.fromEntries(res.headers)]).toEqual([
        res.status,
        expect.objectContaining(Object.fromEntries(common)),
      ])
      expect(res.headers.get('content-type')).toBe('application/json')
      expect(res.headers.get('x-request-id')).toBe(REQUEST_ID)
    }
  })

  it('answers an empty unpaid POST with 402, the PaymentRequired header and the envelope', async () => {
    const { post } = setup()
    const res = await post('')
    expect(res.status).toBe(402)
    expect(res.headers.get('cache-control')).toBe('no-store')
    const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
    expect(required.x402Version).toBe(2)
    expect(required.resource).toEqual({
      url: 'https://tools.example/echo',
      description: 'Upper-cases text.',
      mimeType: 'application/json',
    })
    expect(required.accepts.map((a) => [a.network, a.amount])).toEqual([
      ['eip155:8453', '1000'],
      ['solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp', '1000'],
    ])
    expect(res.headers.get('x-request-id')).toBe(REQUEST_ID)
    expect(await json(res)).toEqual({
      ok: false,
      request_id: REQUEST_ID,
      code: 'payment_required',
      error: 'Payment required: /echo costs 0.001 USDC',
    })
  })

  it('adds the free input check to a 402 when the unpaid request has a body', async () => {
    const { post } = setup()
    const valid = await post('{"text":"abc"}')
    expect((await json(valid)).input_check).toEqual({ valid: true, errors: [] })
    const malformed = await post('{"text":')
    expect(malformed.status).toBe(402)
    const check = (await json(malformed)).input_check
    expect(check.valid).toBe(false)
    expect(check.errors[0].path).toBe('')
    expect(check.errors[0].message).toMatch(/^Malformed JSON body: /)
  })

  it('answers a paid, valid call with 200, the result and PAYMENT-RESPONSE', async () => {
    const { paid } = setup()
    const res = await paid('{"text":"abc"}')
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true, result: { upper: 'ABC' } })
    expect(decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')).toEqual({
      success: true,
      transaction: '0xtx',
      network: 'eip155:8453',
      payer: '0xPAYER',
    })
  })

  it('rejects a paid malformed or missing body with 400 invalid_json and no facilitator call', async () => {
    const { paid, calls } = setup()
    const res = await paid('{"text":')
    expect(res.status).toBe(400)
    expect((await json(res)).code).toBe('invalid_json')
    const empty = await paid('', 'n2')
    expect(empty.status).toBe(400)
    expect(await json(empty)).toEqual({
      ok: false,
      request_id: REQUEST_ID,
      code: 'invalid_json',
      error: 'A JSON request body is required',
    })
    expect(calls.verify).toBe(0)
  })

  it('rejects a paid schema-invalid body with 400 invalid_request and JSON Pointer issues', async () => {
    const { paid, calls } = setup()
    const res = await paid('{"text":"abc","extra":1}')
    expect(res.status).toBe(400)
    const body = await json(res)
    expect(body.code).toBe('invalid_request')
    expect(body.issues).toEqual([{ path: '', message: 'Unrecognized key: "extra"' }])
    expect(calls.verify).toBe(0)
  })

  it('maps a tool failure to 400 with its code and settles nothing', async () => {
    const { paid, calls } = setup()
    const res = await paid('{"text":"boom"}')
    expect(res.status).toBe(400)
    expect(await json(res)).toEqual({
      ok: false,
      code: 'invalid_unicode',
      error: 'tool refused; nothing was charged',
      request_id: REQUEST_ID,
    })
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 0 })
  })

  it('withholds the result with 402 settlement_failed and PAYMENT-RESPONSE on failed settlement', async () => {
    const { paid } = setup({
      settle: async () => ({
        success: false,
        errorReason: 'insufficient_funds',
        transaction: '',
        network: 'eip155:8453',
      }),
    })
    const res = await paid('{"text":"abc"}')
    expect(res.status).toBe(402)
    const text = await res.text()
    expect(text).not.toContain('ABC')
    expect(JSON.parse(text).code).toBe('settlement_failed')
    expect(decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '').success).toBe(
      false,
    )
    expect(decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '').error).toBe(
      'insufficient_funds',
    )
  })

  it('answers 402 invalid_payment to an undecodable PAYMENT-SIGNATURE', async () => {
    const { post } = setup()
    const res = await post('{"text":"abc"}', { 'PAYMENT-SIGNATURE': 'not base64 !' })
    expect(res.status).toBe(402)
    expect((await json(res)).code).toBe('invalid_payment')
  })

  it('fails closed with 503 when the facilitator is down', async () => {
    const { paid, calls } = setup({
      verify: async () => {
        throw new TypeError('fetch failed')
      },
    })
    const res = await paid('{"text":"abc"}')
    expect(res.status).toBe(503)
    expect(await json(res)).toEqual({
      ok: false,
      request_id: REQUEST_ID,
      code: 'facilitator_unavailable',
      error: 'Payment facilitator is unavailable; nothing was run or charged',
    })
    expect(calls.settle).toBe(0)
  })

  it('refuses a declared Content-Length over 1 MiB with 413 before reading the body', async () => {
    const { post, calls } = setup()
    const res = await post('{"text":"abc"}', { 'Content-Length': String(MAX_BODY_BYTES + 1) })
    expect(res.status).toBe(413)
    expect((await json(res)).code).toBe('payload_too_large')
    expect(calls.supported).toBe(0)
  })

  it('refuses a streamed body (no Content-Length) over 1 MiB with 413', async () => {
    const { app } = setup()
    const chunk = new TextEncoder().encode('a'.repeat(64 * 1024))
    let sent = 0
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent > MAX_BODY_BYTES) return controller.close()
        sent += chunk.length
        controller.enqueue(chunk)
      },
    })
    const request = new Request('http://svc/echo', {
      method: 'POST',
      body,
      duplex: 'half',
    } as RequestInit)
    expect(request.headers.get('content-length')).toBeNull()
    const res = await app.request(request)
    expect(res.status).toBe(413)
    expect(res.headers.get('x-request-id')).toMatch(UUID)
    expect(await json(res)).toEqual({
      ok: false,
      code: 'payload_too_large',
      error: 'The body exceeds 1 MiB',
      request_id: res.headers.get('x-request-id'),
    })
  })

  it('answers an unknown path with the 404 envelope', async () => {
    const { app } = setup()
    const res = await app.request('/nope', { method: 'POST' })
    expect(res.status).toBe(404)
    expect(res.headers.get('x-request-id')).toMatch(UUID)
    expect(await json(res)).toEqual({
      ok: false,
      code: 'not_found',
      error: 'Not found',
      request_id: res.headers.get('x-request-id'),
    })
  })

  it('answers 503 overloaded with Retry-After when the runner is full, before verify', async () => {
    const runner = inlineRunner({ capacity: 0 })
    const { paid, calls } = setup({}, { runner })
    const res = await paid('{"text":"abc"}')
    expect(res.status).toBe(503)
    expect(res.headers.get('retry-after')).toBe('2')
    expect(await json(res)).toEqual({
      ok: false,
      request_id: REQUEST_ID,
      code: 'overloaded',
      error: 'The service is at capacity; nothing was verified, run or charged. Retry shortly',
    })
    expect(calls.verify + calls.settle).toBe(0)
  })

  it('answers 400 tool_timeout when the tool runs out of its budget, and settles nothing', async () => {
    const runner = inlineRunner({
      run: async () => {
        throw new ToolTimeoutError(2000)
      },
    })
    const { paid, calls } = setup({}, { runner })
    const res = await paid('{"text":"abc"}')
    expect(res.status).toBe(400)
    expect(res.headers.get('payment-response')).toBeNull()
    expect(await json(res)).toEqual({
      ok: false,
      request_id: REQUEST_ID,
      code: 'tool_timeout',
      error:
        'The tool did not finish within its 2000 ms budget and was stopped; nothing was charged',
    })
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 0 })
  })
})
