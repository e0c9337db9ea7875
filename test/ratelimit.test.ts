import { encodePaymentSignatureHeader } from '@x402/core/http'
import { describe, expect, it } from 'vitest'
import { createApp } from '../src/http/app.js'
import { createRateLimit } from '../src/http/rate-limit.js'
import { resolveAllowList } from '../src/mcp/dns-rebinding.js'
import { registerMcp } from '../src/mcp/server.js'
import type { ToolDefinition } from '../src/tools/types.js'
import { echoTool, type FacilitatorScript, fakeGate, inlineRunner } from './helpers/fakes.js'
import { json } from './helpers/json.js'

// The rate limit in the real app (createApp with the MCP endpoint mounted, as src/service.ts
// builds it) over a scripted facilitator: what counts, what does not, and the 429 itself.

const BASE_URL = 'http://127.0.0.1:8402'
const CLIENT = '198.51.100.7'

function setup(points: number, script: FacilitatorScript = {}) {
  const runner = inlineRunner()
  const fake = fakeGate(script, undefined, { runner })
  const limit = createRateLimit({
    points,
    durationSeconds: 60,
    trustProxyHops: 0,
    paidPaths: new Set(['/echo']),
  })
  if (!limit) throw new Error('limit disabled')
  const tools = [echoTool as ToolDefinition]
  const app = createApp({
    gate: fake.gate,
    tools,
    publicBaseUrl: BASE_URL,
    rateLimit: limit,
    mounts: [
      (app) =>
        registerMcp(app, {
          gate: fake.gate,
          tools,
          publicBaseUrl: BASE_URL,
          allowList: resolveAllowList({ publicBaseUrl: BASE_URL, host: '127.0.0.1', port: 8402 }),
          quotaOf: limit.quotaOf,
        }),
    ],
  })
  /** A request from CLIENT's socket, as @hono/node-server hands it to the app. */
  const send = async (path: string, init: RequestInit = {}) =>
    app.request(`${BASE_URL}${path}`, init, { incoming: { socket: { remoteAddress: CLIENT } } })
  const post = (headers: Record<string, string> = {}, body = '{"text":"a"}') =>
    send('/echo', {
      method: 'POST',
      body,
      headers: { 'content-type': 'application/json', ...headers },
    })
  const paid = async (nonce: string) =>
    post({ 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(await fake.pay(0, nonce)) })
  const rpc = (message: Record<string, unknown>) =>
    send('/mcp', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...message }),
    })
  const mcpCall = (payment?: unknown) =>
    rpc({
      method: 'tools/call',
      params: {
        name: 'payload_echo',
        arguments: { text: 'a' },
        ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
      },
    })
  /** A settled payment's reward is given after the answer. */
  const settle = () => new Promise((resolve) => setTimeout(resolve, 10))
  return { ...fake, fake, runner, send, post, paid, rpc, mcpCall, settle }
}

const ENVELOPE = {
  ok: false,
  error:
    'Too many unpaid requests: 5 per 60 s per client. Paying clients are never limited by their paid calls. Retry after Retry-After seconds.',
  code: 'rate_limited',
}

describe('rate limit in the app', () => {
  it('counts the free endpoints and the 402s, then answers 429 with the envelope and every header', async () => {
    const { send, post } = setup(5)
    const free = [
      await send('/openapi.json'),
      await send('/llms.txt'),
      await send('/.well-known/x402'),
      await send('/stats'),
      await post(),
    ]
    expect(free.map((r) => r.status)).toEqual([200, 200, 200, 503, 402])
    // The discovery documents state the limit and its code.
    const llms = await (free[1] as Response).text()
    expect(llms).toContain('5 per 60 s (`RATE_LIMIT_POINTS`, `RATE_LIMIT_DURATION_S`)')
    expect(llms).toMatch(/rate_limited.*429|429.*rate_limited/)
    const openapi = (await json(free[0] as Response)) as {
      paths: Record<string, { post?: { responses: Record<string, unknown> } }>
    }
    expect(openapi.paths['/echo']?.post?.responses['429']).toBeDefined()
    const res = await post()
    expect(res.status).toBe(429)
    expect(await json(res)).toEqual({ ...ENVELOPE, request_id: res.headers.get('x-request-id') })
    expect(res.headers.get('retry-after')).toMatch(/^(59|60)$/)
    expect(res.headers.get('ratelimit-policy')).toBe('"free";q=5;w=60')
    expect(res.headers.get('ratelimit')).toBe(`"free";r=0;t=${res.headers.get('retry-after')}`)
    expect(res.headers.get('cache-control')).toBe('no-store')
    // The precomputed security and CORS headers are on the 429 too.
    expect(res.headers.get('access-control-allow-origin')).toBe('*')
    expect(res.headers.get('access-control-expose-headers')).toContain('RateLimit-Policy')
    expect(res.headers.get('x-content-type-options')).toBe('nosniff')
    for (const path of ['/', '/capabilities', '/robots.txt', '/nowhere']) {
      expect((await send(path)).status, path).toBe(429)
    }
    // The load balancer's probe is never limited.
    expect((await send('/health')).status).not.toBe(429)
  })

  it('never limits a client that pays for what it calls: each settled payment gives its points back and two more', async () => {
    const { post, paid, calls, settle } = setup(3)
    for (let i = 0; i < 30; i++) {
      expect((await post()).status).toBe(402)
      const res = await paid(`p${i}`)
      expect(res.status).toBe(200)
      expect(res.headers.get('payment-response')).toBeTruthy()
      await settle()
    }
    expect(calls.settle).toBe(30)
    // 30 × (1 + 1 - 3) points: the client has credit left for its free requests.
    for (let i = 0; i < 3; i++) expect((await post()).status).toBe(402)
  })

  it('refuses a request with a payment over the limit before it is read: 429, nothing checked, verified or run', async () => {
    const { post, paid, calls, runner } = setup(2)
    expect([(await post()).status, (await post()).status, (await post()).status]).toEqual([
      402, 402, 429,
    ])
    const refused = await paid('late')
    expect([refused.status, (await json(refused)).code]).toEqual([429, 'rate_limited'])
    expect([runner.checks, calls.verify, runner.runs]).toEqual([2, 0, 0])
  })

  it('charges a paid request a point per started 64 KiB of its body before reading it', async () => {
    const { post, paid } = setup(20)
    const big = JSON.stringify({ text: 'a', pad: 'x'.repeat(5 * 65536) })
    const refused = await post({ 'PAYMENT-SIGNATURE': 'not base64!' }, big)
    expect([refused.status, (await json(refused)).code]).toEqual([402, 'invalid_payment'])
    // 6 points for that body; 14 left, used by 14 unpaid requests without a body.
    for (let i = 0; i < 14; i++) expect((await post({}, '')).status).toBe(402)
    expect((await paid('next')).status).toBe(429)
  })

  it('charges every paid request before it is answered, a refused payment, a replay and a conflict too: over the limit, 429 and nothing runs', async () => {
    const { post, paid, settle, calls, fake, runner } = setup(3)
    const junk = await post({ 'PAYMENT-SIGNATURE': 'not base64!' })
    expect([junk.status, (await json(junk)).code]).toEqual([402, 'invalid_payment'])
    expect((await paid('same')).status).toBe(200) // settled: its point and two more back
    await settle()
    // The same payment again: an idempotent replay (200, no second settlement), yet a point.
    expect((await paid('same')).status).toBe(200)
    expect(calls.settle).toBe(1)
    const other = await post(
      { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(await fake.pay(0, 'same')) },
      '{"text":"b"}',
    )
    expect([other.status, (await json(other)).code]).toEqual([402, 'duplicate_settlement'])
    // 1 + 1 + 1 + 1 - 3 = 1 of 3 used: two more requests, then the limit.
    expect((await post()).status).toBe(402)
    expect((await post()).status).toBe(402)
    const replay = await paid('same')
    expect([replay.status, (await json(replay)).code]).toEqual([429, 'rate_limited'])
    expect(replay.headers.get('ratelimit-policy')).toBe('"free";q=3;w=60')
    expect(Number(replay.headers.get('retry-after'))).toBeGreaterThan(0)
    expect(runner.runs).toBe(2)

    // A payment the facilitator rejects has paid its point: the next is refused before verify.
    const refusing = setup(1, { verify: async () => ({ isValid: false, invalidReason: 'nope' }) })
    const rejected = await refusing.paid('r1')
    expect([rejected.status, (await json(rejected)).code]).toEqual([
      402,
      'payment_verification_failed',
    ])
    expect((await refusing.paid('r2')).status).toBe(429)
    expect(refusing.calls.verify).toBe(1)
  })

  it('charges every MCP request before reading it, and gives a settled paid call its point back with two more', async () => {
    const { rpc, mcpCall, pay, calls, settle } = setup(4)
    const statuses = [
      (await rpc({ method: 'initialize', params: initialize })).status,
      (await rpc({ method: 'tools/list' })).status,
      (await mcpCall()).status,
    ]
    expect(statuses).toEqual([200, 200, 200])
    const res = await mcpCall(await pay(0, 'm1'))
    expect(res.status).toBe(200)
    const { result } = (await json(res)) as { result: { isError?: boolean } }
    expect(result.isError).toBeFalsy()
    expect(calls.settle).toBe(1)
    await settle()
    // 4 - 3 - 1 + 3: three more requests, then the limit.
    for (let i = 0; i < 3; i++) expect((await rpc({ method: 'tools/list' })).status).toBe(200)
    const refused = await rpc({ method: 'tools/list' })
    expect([refused.status, await json(refused)]).toEqual([
      429,
      {
        ...ENVELOPE,
        error: ENVELOPE.error.replace('5 per', '4 per'),
        request_id: refused.headers.get('x-request-id'),
      },
    ])
    expect((await mcpCall(await pay(0, 'm2'))).status).toBe(429)

    // A junk MCP payment costs its request's point; over the limit the request is refused whole.
    const fresh = setup(2)
    const codes: unknown[] = []
    for (let i = 0; i < 2; i++) {
      const junk = await fresh.mcpCall({ x402Version: 2, junk: true })
      expect(junk.status).toBe(200)
      const body = (await json(junk)) as {
        result: { _meta: Record<string, { code: string }> }
      }
      codes.push(body.result._meta['payload-tools/failure']?.code)
    }
    expect(codes).toEqual(['invalid_payment', 'invalid_payment'])
    expect((await fresh.mcpCall({ x402Version: 2, junk: true })).status).toBe(429)
    expect(fresh.calls.verify).toBe(0)
  })
})

const initialize = {
  protocolVersion: '2025-06-18',
  capabilities: {},
  clientInfo: { name: 'rate-limit-test', version: '1.0.0' },
}
