import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { McpError } from '@modelcontextprotocol/sdk/types.js'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import { VerifyError } from '@x402/core/types'
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { z } from 'zod'
import {
  FAKE_SOLANA,
  type FacilitatorScript,
  fakeGate,
  fakePayload,
  inlineRunner,
} from '../../test/helpers/fakes.js'
import { callArguments } from '../runner/check.js'
import { OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import type { Lane } from '../runner/runner.js'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import { resolveAllowList } from './dns-rebinding.js'
import { MAX_BATCH_MESSAGES, registerMcp } from './server.js'

// Unit tests of our MCP adapter with the official MCP client: the facilitator is a scripted fake
// here. test/mcp.e2e.test.ts pays for real on the local chains.

const SOLANA = FAKE_SOLANA
const BASE_URL = 'http://127.0.0.1:8402'
const EVM_PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const SOLANA_PAY_TO = '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4'

// Our own echo (not the helper's): price 3000, a defaulted field, and a run counter.
let runs = 0
const echoInput = z.object({ text: z.string().max(10), loud: z.boolean().default(false) }).strict()
const echo: ToolDefinition<z.output<typeof echoInput>, { upper: string }> = {
  id: 'echo',
  path: '/echo',
  mcpName: 'payload_echo',
  operationId: 'echo',
  price: '3000',
  title: 'Echo',
  description: 'Upper-cases text.',
  input: echoInput,
  output: z.object({ upper: z.string() }),
  examples: [{ text: 'abc', loud: false }],
  limits: [],
  check: () => {},
  run: ({ text }) => {
    runs++
    if (text === 'boom') throw new ToolError('invalid_unicode', 'tool refused', { offset: 0 })
    return { upper: text.toUpperCase() }
  },
}

/** The JSON Schema (2020-12) of the echo's arguments, as tools/list and the bazaar give it. */
const ECHO_INPUT_SCHEMA = {
  $schema: 'https://json-schema.org/draft/2020-12/schema',
  type: 'object',
  properties: {
    text: { type: 'string', maxLength: 10 },
    loud: { type: 'boolean', default: false },
  },
  required: ['text'],
  additionalProperties: false,
}

const clients: Client[] = []
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()))
})

async function setup(script: FacilitatorScript = {}, extra: Parameters<typeof fakeGate>[2] = {}) {
  const { gate, calls, events } = fakeGate(script, undefined, extra)
  const app = new Hono()
  registerMcp(app, {
    gate,
    tools: [echo as ToolDefinition],
    publicBaseUrl: BASE_URL,
    allowList: resolveAllowList({ publicBaseUrl: BASE_URL, host: '127.0.0.1', port: 8402 }),
  })
  // Building the endpoint ran the example once (bazaar output); count only calls from here.
  runs = 0
  const client = new Client({ name: 'unit', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE_URL}/mcp`), {
    fetch: async (url, init) => app.request(url, init),
  })
  await client.connect(transport)
  clients.push(client)
  await client.listTools()
  return { app, client, calls, events }
}

/** What an x402 client builds from a PaymentRequired (resource and extensions echoed). */
function paymentFor(required: PaymentRequired, index: number, nonce: string): PaymentPayload {
  const accepted = required.accepts[index]
  if (!accepted) throw new Error('no such rail')
  return {
    x402Version: 2,
    resource: required.resource,
    accepted,
    payload: fakePayload(accepted, nonce),
    ...(required.extensions ? { extensions: required.extensions } : {}),
  }
}

const failureOf = (result: { _meta?: Record<string, unknown> }) =>
  result._meta?.['payload-tools/failure'] as { ok: false; code: string; error: string } & Record<
    string,
    unknown
  >

describe('MCP endpoint: tools/list', () => {
  it('lists the catalogue with our schemas, annotations and price, and never asks to pay', async () => {
    const { client, calls } = await setup()
    const { tools } = await client.listTools()
    expect(tools).toHaveLength(1)
    const [tool] = tools
    expect(tool?.name).toBe('payload_echo')
    expect(tool?.title).toBe('Echo')
    expect(tool?.description).toBe(
      'Upper-cases text. Price: 0.003 USDC per call (x402 v2, scheme exact, on Base or Solana). ' +
        'Call without payment to receive the PaymentRequired, then call again with the signed ' +
        'PaymentPayload in _meta["x402/payment"]; nothing is charged when the arguments are ' +
        'invalid or the tool fails.',
    )
    expect(tool?.inputSchema).toEqual(ECHO_INPUT_SCHEMA)
    const anyOf = tool?.outputSchema?.anyOf as unknown[]
    expect(anyOf).toHaveLength(3)
    expect(anyOf[0]).toEqual({
      title: 'Success',
      type: 'object',
      properties: {
        ok: { const: true },
        result: {
          type: 'object',
          properties: { upper: { type: 'string' } },
          required: ['upper'],
          additionalProperties: false,
        },
      },
      required: ['ok', 'result'],
      additionalProperties: false,
    })
    expect(tool?.annotations).toEqual({
      title: 'Echo',
      readOnlyHint: true,
      destructiveHint: false,
      idempotentHint: true,
      openWorldHint: false,
    })
    expect(tool?._meta).toEqual({
      'x402/price': {
        amount: '3000',
        currency: 'USDC',
        decimals: 6,
        display: '0.003 USDC',
        scheme: 'exact',
        networks: ['eip155:8453', SOLANA],
      },
      'payload-tools/tool': 'echo',
    })
    await client.ping()
    expect(calls).toEqual({ supported: 0, verify: 0, settle: 0 })
  })

  it('answers initialize with the server info and payment instructions, without a session', async () => {
    const { client } = await setup()
    expect(client.getServerVersion()).toEqual({
      name: 'payload-tools',
      title: 'Payload Tools',
      version: '0.3.0',
    })
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: false })
    expect(client.getInstructions()).toContain('params._meta["x402/payment"]')
  })
})

describe('MCP endpoint: tools/call', () => {
  it('answers an unpaid call with the PaymentRequired as an isError result', async () => {
    const { client, calls } = await setup()
    const result = await client.callTool({ name: 'payload_echo', arguments: { text: 'abc' } })
    expect(result.isError).toBe(true)
    const required = result.structuredContent as PaymentRequired
    expect(required.x402Version).toBe(2)
    expect(required.error).toBe('Payment required')
    expect(required.resource).toEqual({
      url: `${BASE_URL}/mcp`,
      description: 'Upper-cases text.',
      mimeType: 'application/json',
    })
    expect(required.accepts.map((a) => [a.network, a.amount, a.payTo])).toEqual([
      ['eip155:8453', '3000', EVM_PAY_TO],
      [SOLANA, '3000', SOLANA_PAY_TO],
    ])
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(required) }])
    const bazaar = (required.extensions as { bazaar: { info: { input: unknown } } }).bazaar
    expect(bazaar.info.input).toEqual({
      type: 'mcp',
      toolName: 'payload_echo',
      tool: 'payload_echo',
      description: 'Upper-cases text.',
      transport: 'streamable-http',
      inputSchema: ECHO_INPUT_SCHEMA,
      example: { text: 'abc', loud: false },
    })
    expect(failureOf(result)).toEqual({
      ok: false,
      code: 'payment_required',
      error: 'Payment required: /echo costs 0.003 USDC',
      input_check: { valid: true, errors: [] },
    })
    expect(calls.verify + calls.settle).toBe(0)
    expect(runs).toBe(0)
  })

  it('reports invalid arguments for free in the unpaid answer', async () => {
    const { client } = await setup()
    const result = await client.callTool({ name: 'payload_echo', arguments: { text: 7 } })
    expect(failureOf(result).input_check).toEqual({
      valid: false,
      errors: [{ path: '/text', message: 'Invalid input: expected string, received number' }],
    })
  })

  it('verifies, runs and settles a paid call, returning the HTTP envelope and the receipt', async () => {
    const { client, calls, events } = await setup()
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: { text: 'abc' } })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 1, 'n1')
    const result = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'abc' },
      _meta: { 'x402/payment': payment },
    })
    expect(result).toEqual({
      content: [{ type: 'text', text: '{"ok":true,"result":{"upper":"ABC"}}' }],
      structuredContent: { ok: true, result: { upper: 'ABC' } },
      _meta: {
        'x402/payment-response': {
          success: true,
          transaction: '0xtx',
          network: SOLANA,
          payer: '0xPAYER',
        },
      },
    })
    expect(calls).toEqual({ supported: 1, verify: 1, settle: 1 })
    expect(events.map((e) => [e.outcome, e.transport, e.tool, e.amount])).toEqual([
      ['verified', 'mcp', 'echo', '3000'],
      ['settled', 'mcp', 'echo', '3000'],
    ])
  })

  it('replays a repeated payment for the same arguments, and refuses it for others', async () => {
    const { client, calls } = await setup()
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: { text: 'a' } })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n2')
    const call = (text: string) =>
      client.callTool({
        name: 'payload_echo',
        arguments: { text },
        _meta: { 'x402/payment': payment },
      })
    const first = await call('a')
    expect(first.isError).toBeUndefined()
    const replay = await call('a')
    expect(replay.isError).toBeUndefined()
    expect(replay.structuredContent).toEqual(first.structuredContent)
    const { payer: _payer, ...recorded } = (first._meta?.['x402/payment-response'] ?? {}) as Record<
      string,
      unknown
    >
    expect(replay._meta?.['x402/payment-response']).toEqual(recorded)
    const other = await call('b')
    expect(other.isError).toBe(true)
    expect(failureOf(other).code).toBe('duplicate_settlement')
    expect((other.structuredContent as PaymentRequired).error).toBe('duplicate_settlement')
    expect(calls.settle).toBe(1)
  })

  it('rejects invalid arguments of a paid call before any facilitator call', async () => {
    const { client, calls } = await setup()
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: {} })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n3')
    const result = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'far too long here', extra: 1 },
      _meta: { 'x402/payment': payment },
    })
    const envelope = {
      ok: false,
      error:
        'Invalid request: /text Too big: expected string to have <=10 characters; / Unrecognized key: "extra"',
      code: 'invalid_request',
      issues: [
        { path: '/text', message: 'Too big: expected string to have <=10 characters' },
        { path: '', message: 'Unrecognized key: "extra"' },
      ],
    }
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual(envelope)
    expect(result.content).toEqual([{ type: 'text', text: JSON.stringify(envelope) }])
    expect(calls.verify + calls.settle).toBe(0)
    expect(runs).toBe(0)
  })

  it('never settles a call whose tool failed', async () => {
    const { client, calls, events } = await setup()
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: {} })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n4')
    const result = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'boom' },
      _meta: { 'x402/payment': payment },
    })
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual({
      ok: false,
      code: 'invalid_unicode',
      error: 'tool refused; nothing was charged',
      details: { offset: 0 },
    })
    expect(result._meta?.['x402/payment-response']).toBeUndefined()
    expect(calls.settle).toBe(0)
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
  })

  it('withholds the result when settlement returns success: false', async () => {
    const { client, calls } = await setup({
      settle: async () => ({
        success: false,
        errorReason: 'invalid_transaction_state',
        transaction: '',
        network: 'eip155:8453',
      }),
    })
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: {} })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n5')
    const result = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'secret' },
      _meta: { 'x402/payment': payment },
    })
    expect(runs).toBe(1)
    expect(calls.settle).toBe(1)
    expect(result.isError).toBe(true)
    expect((result.structuredContent as PaymentRequired).error).toBe('invalid_transaction_state')
    expect((result.structuredContent as PaymentRequired).accepts).toHaveLength(2)
    expect(failureOf(result).code).toBe('settlement_failed')
    expect(result._meta?.['x402/payment-response']).toEqual({
      success: false,
      errorReason: 'invalid_transaction_state',
      transaction: '',
      network: 'eip155:8453',
    })
    expect(JSON.stringify(result)).not.toContain('SECRET')
  })

  it('fails closed with facilitator_unavailable when /supported is unreachable', async () => {
    const { client } = await setup({
      supported: async () => {
        throw new TypeError('fetch failed')
      },
    })
    const result = await client.callTool({ name: 'payload_echo', arguments: { text: 'a' } })
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual({
      ok: false,
      code: 'facilitator_unavailable',
      error: 'Payment facilitator is unavailable',
    })
    expect(runs).toBe(0)
  })

  it('fails closed without running the tool when verify hits a facilitator outage', async () => {
    const { client, calls } = await setup({
      verify: async () => {
        throw new VerifyError(502, { isValid: false, invalidReason: 'upstream' })
      },
    })
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: {} })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n6')
    const result = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'a' },
      _meta: { 'x402/payment': payment },
    })
    expect(failureOf(result).code).toBe('facilitator_unavailable')
    expect(result.structuredContent).toEqual(failureOf(result))
    expect(runs).toBe(0)
    expect(calls.settle).toBe(0)
  })

  it('refuses a payment whose echoed bazaar extension was altered', async () => {
    const { client, calls } = await setup()
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: {} })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n7')
    payment.extensions = { bazaar: { info: { input: { type: 'mcp', tool: 'other' } } } }
    const result = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'a' },
      _meta: { 'x402/payment': payment },
    })
    expect(failureOf(result).code).toBe('invalid_payment')
    expect(calls.verify).toBe(0)
  })

  it('answers overloaded (before verify) and tool_timeout (never settled) as isError results', async () => {
    const full = await setup({}, { runner: inlineRunner({ capacity: 0 }) })
    const unpaid = await full.client.callTool({ name: 'payload_echo', arguments: {} })
    const busy = await full.client.callTool({
      name: 'payload_echo',
      arguments: { text: 'a' },
      _meta: { 'x402/payment': paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'o1') },
    })
    expect(busy.isError).toBe(true)
    expect(busy.structuredContent).toEqual({
      ok: false,
      code: 'overloaded',
      error: 'The service is at capacity; nothing was verified, run or charged. Retry shortly',
    })
    expect(full.calls.verify).toBe(0)

    const slow = await setup(
      {},
      {
        runner: inlineRunner({
          run: async () => {
            throw new ToolTimeoutError(2000)
          },
        }),
      },
    )
    const again = await slow.client.callTool({ name: 'payload_echo', arguments: {} })
    const stopped = await slow.client.callTool({
      name: 'payload_echo',
      arguments: { text: 'a' },
      _meta: { 'x402/payment': paymentFor(again.structuredContent as PaymentRequired, 0, 't1') },
    })
    expect(stopped.isError).toBe(true)
    expect(failureOf(stopped)).toEqual({
      ok: false,
      code: 'tool_timeout',
      error:
        'The tool did not finish within its 2000 ms budget and was stopped; nothing was charged',
    })
    expect(stopped._meta?.['x402/payment-response']).toBeUndefined()
    expect(slow.calls.settle).toBe(0)
    expect(slow.events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
  })

  // Found by fuzzing (test/surfaces.fuzz.e2e.test.ts): the SDK's parse of the request dropped an
  // own "__proto__" key of `arguments`, so MCP accepted and settled a body HTTP refuses.
  it('checks arguments exactly as sent: an own "__proto__" key is refused, as over HTTP', async () => {
    const { app, calls } = await setup()
    const raw = (body: string) =>
      app.request(`${BASE_URL}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body,
      })
    const res = await raw(
      '{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"payload_echo","arguments":{"text":"a","__proto__":{}}}}',
    )
    expect(res.status).toBe(200)
    const { result } = (await res.json()) as { result: { _meta?: Record<string, unknown> } }
    expect(failureOf(result).input_check).toEqual({
      valid: false,
      errors: [{ path: '', message: 'Unrecognized key: "__proto__"' }],
    })
    expect(calls.verify + calls.settle).toBe(0)
    const notJson = await raw('{"jsonrpc":')
    expect([notJson.status, await notJson.json()]).toEqual([
      400,
      { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Invalid JSON' }, id: null },
    ])
  })

  it('finds the raw arguments of a call by its id, in one message or a batch', () => {
    const call = (id: number, args: unknown) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: { name: 'x', arguments: args },
    })
    expect(callArguments(call(1, { a: 1 }), 1)).toEqual({ a: 1 })
    expect(callArguments([call(1, { a: 1 }), call(2, { b: 2 })], 2)).toEqual({ b: 2 })
    expect(callArguments(call(1, { a: 1 }), 2)).toBeUndefined()
    expect(callArguments({ jsonrpc: '2.0', id: 1, method: 'tools/list' }, 1)).toBeUndefined()
  })

  it('refuses a batch with more than one paid tools/call, or too many messages, whole: nothing verified or run', async () => {
    const { app, calls } = await setup()
    const post = (body: unknown) =>
      app.request(`${BASE_URL}/mcp`, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify(body),
      })
    const paidCall = (id: number) => ({
      jsonrpc: '2.0',
      id,
      method: 'tools/call',
      params: {
        name: 'payload_echo',
        arguments: { text: 'a' },
        _meta: { 'x402/payment': { x402Version: 2, payload: { nonce: 'same' } } },
      },
    })
    const two = await post([paidCall(1), paidCall(2)])
    expect([two.status, await two.json()]).toEqual([
      400,
      {
        jsonrpc: '2.0',
        id: null,
        error: {
          code: -32600,
          message:
            'One request carries at most one paid tools/call (this batch holds 2); nothing was verified or run. Send each paid call in its own request.',
        },
      },
    ])
    const list = { jsonrpc: '2.0', method: 'tools/list' }
    const many = await post(
      Array.from({ length: MAX_BATCH_MESSAGES + 1 }, (_, i) => ({ ...list, id: i })),
    )
    expect(many.status).toBe(400)
    expect(((await many.json()) as { error: { message: string } }).error.message).toBe(
      `One request carries at most ${MAX_BATCH_MESSAGES} JSON-RPC messages (this batch holds ${MAX_BATCH_MESSAGES + 1}); nothing was run.`,
    )
    expect(calls.verify + calls.settle).toBe(0)
    expect(runs).toBe(0)
  })

  it('answers an unknown tool with JSON-RPC error -32602 naming the tools', async () => {
    const { client } = await setup()
    const error = await client.callTool({ name: 'nope', arguments: {} }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).code).toBe(-32602)
    expect((error as McpError).message).toBe(
      `MCP error -32602: Unknown tool: nope. The tools are ${echo.mcpName} (tools/list describes them).`,
    )
    expect((error as McpError).data).toEqual({ tools: [echo.mcpName] })
  })
})

describe('MCP endpoint: HTTP surface', () => {
  const initialize = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'curl', version: '1' },
    },
  }
  const post = (app: Hono, headers: Record<string, string>) =>
    app.request(`${BASE_URL}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: JSON.stringify(initialize),
    })

  it('refuses a foreign Host or Origin with 403 (DNS rebinding) and accepts allowed ones', async () => {
    const { app } = await setup()
    const rebound = await post(app, { host: 'evil.test:8402' })
    expect(rebound.status).toBe(403)
    expect(await rebound.json()).toEqual({
      jsonrpc: '2.0',
      error: { code: -32000, message: 'Host not allowed: evil.test:8402' },
      id: null,
    })
    expect((await post(app, { host: 'evil.test@127.0.0.1' })).status).toBe(403)
    expect((await post(app, { origin: 'http://evil.test' })).status).toBe(403)
    expect((await post(app, { origin: 'null' })).status).toBe(403)
    const ok = await post(app, { host: 'localhost:8402', origin: 'http://localhost:8402' })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('mcp-session-id')).toBeNull()
    expect(((await ok.json()) as { result: { serverInfo: unknown } }).result.serverInfo).toEqual({
      name: 'payload-tools',
      title: 'Payload Tools',
      version: '0.3.0',
    })
  })
})

// Issue 40, round three (finding 5): a body's bytes never choose its lane; a paid call is served
// when free work fills the free lane.
describe('MCP endpoint: the lanes', () => {
  const full = (lane: Lane) => (lane === 'free' ? new OverloadedError(2) : undefined)
  const raw = (app: Hono, body: string) =>
    app.request(`${BASE_URL}/mcp`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body,
    })

  it('reads every body on the free lane and checks a paying call there first, whatever text it holds', async () => {
    const runner = inlineRunner()
    const { client, calls } = await setup({}, { runner })
    runner.lanes.length = 0
    const unpaid = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'x402/payment' },
    })
    expect(unpaid.isError).toBe(true)
    // The body read, then the 402's free check.
    expect(runner.lanes).toEqual(['free', 'free'])
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n1')
    runner.lanes.length = 0
    const paid = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'abc' },
      _meta: { 'x402/payment': payment },
    })
    expect(paid.structuredContent).toEqual({ ok: true, result: { upper: 'ABC' } })
    expect(runner.lanes).toEqual(['free', 'free'])
    expect(calls).toMatchObject({ verify: 1, settle: 1 })
  })

  it('serves a paid call whose body the free lane cannot read: its envelope read here, its payment verified once, then its arguments checked on the paid lane', async () => {
    const runner = inlineRunner()
    const { client, calls, events } = await setup({}, { runner })
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: { text: 'abc' } })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n1')
    runner.lanes.length = 0
    runner.refuse = full
    const paid = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'abc' },
      _meta: { 'x402/payment': payment },
    })
    expect(paid.structuredContent).toEqual({ ok: true, result: { upper: 'ABC' } })
    expect(runner.lanes).toEqual(['free', 'free', 'paid'])
    expect(calls).toMatchObject({ verify: 1, settle: 1 })
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
  })

  it('never puts a payment that fails verify on the paid lane: its envelope is read, the call refused 402', async () => {
    const runner = inlineRunner()
    const { client, calls } = await setup(
      { verify: async () => ({ isValid: false, invalidReason: 'insufficient_funds' }) },
      { runner },
    )
    const unpaid = await client.callTool({ name: 'payload_echo', arguments: { text: 'abc' } })
    const payment = paymentFor(unpaid.structuredContent as PaymentRequired, 0, 'n1')
    runner.lanes.length = 0
    runner.refuse = full
    const refused = await client.callTool({
      name: 'payload_echo',
      arguments: { text: 'abc' },
      _meta: { 'x402/payment': payment },
    })
    expect(failureOf(refused)).toMatchObject({
      code: 'payment_verification_failed',
      error: 'The facilitator rejected the payment: insufficient_funds',
    })
    expect(runner.lanes).toEqual(['free', 'free'])
    expect([calls.verify, calls.settle, runs]).toEqual([1, 0, 0])
  })

  it('answers the free lane\'s 503 for any other body it cannot read, nothing on the paid lane: "x402/payment" in the arguments, a string, a batch, a tools/list', async () => {
    const runner = inlineRunner()
    const { app, calls } = await setup({}, { runner })
    runner.lanes.length = 0
    runner.refuse = full
    const meta = { 'x402/payment': { x402Version: 2 } }
    const call = (params: Record<string, unknown>, method = 'tools/call') => ({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: { name: 'payload_echo', arguments: { text: 'a' }, ...params },
    })
    const bodies = [
      call({ arguments: { text: 'a', _meta: meta, note: 'x402/payment' } }),
      call({ name: 'x402/payment' }),
      call({ list: [{ _meta: meta }] }),
      [call({ _meta: meta })],
      call({ _meta: meta }, 'tools/list'),
    ]
    for (const body of bodies) {
      const res = await raw(app, JSON.stringify(body))
      expect(res.status).toBe(503)
      expect(res.headers.get('retry-after')).toBe('2')
      expect(((await res.json()) as { code: string }).code).toBe('overloaded')
    }
    expect(runner.lanes).toEqual(Array(bodies.length).fill('free'))
    expect(calls.verify).toBe(0)
  })
})
