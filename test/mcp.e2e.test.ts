import { request } from 'node:http'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { type CallToolResult, McpError } from '@modelcontextprotocol/sdk/types.js'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toolInputSchema } from '../src/descriptions/json-schema.js'
import type { DevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { catalog, findToolByMcpName } from '../src/tools/catalog.js'
import type { ToolDefinition, ToolEnv } from '../src/tools/types.js'
import { paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance as payToBalanceOn, type Rail } from './helpers/rails.js'
import { type DevService, type RunningService, startDevService } from './helpers/service.js'

// End-to-end over real parts: anvil (Base, chain id 8453) and litesvm (Solana) with USDC at the
// real addresses, the official @x402/core facilitator, the service over HTTP, the official MCP
// client (Client + StreamableHTTPClientTransport) and the official x402Client with the EVM and
// SVM exact client schemes building the PaymentPayload that goes in _meta["x402/payment"].

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
let stack: DevStack
let svc: RunningService
let events: PaymentEvent[]
let mcp: Client

beforeAll(async () => {
  dev = await startDevService({ payers: 3, clock })
  ;({ stack, svc, events } = dev)
  mcp = new Client({ name: 'mcp-e2e', version: '1.0.0' })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`)))
})
afterAll(async () => {
  await mcp?.close()
  await dev?.stop()
})

const payToBalance = (rail: Rail) => payToBalanceOn(stack, rail)
const networkOf = (rail: Rail) => (rail === 'evm' ? 'eip155:8453' : stack.solana.network)

const call = (name: string, args: unknown, payment?: PaymentPayload) =>
  mcp.callTool({
    name,
    arguments: args as Record<string, unknown>,
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  }) as Promise<CallToolResult>

/** Calls unpaid, then signs one of the offered rails with the official x402Client. */
async function signPayment(name: string, args: unknown, rail: Rail, payer = 0) {
  const unpaid = await call(name, args)
  expect(unpaid.isError).toBe(true)
  const required = unpaid.structuredContent as PaymentRequired
  const client = await payerClient(payerKeys(stack, rail, payer), rail)
  return { required, payment: await client.createPaymentPayload(required) }
}

const codeOf = (result: CallToolResult) =>
  (result._meta?.['payload-tools/failure'] as { code: string } | undefined)?.code
const expectedResult = (tool: ToolDefinition) => tool.run(tool.input.parse(tool.examples[0]), clock)

describe('MCP discovery', () => {
  it('lists the 8 tools with catalogue schemas, read-only annotations and prices, for free', async () => {
    events.length = 0
    const { tools } = await mcp.listTools()
    expect(tools.map((t) => t.name)).toEqual([
      'payload_hash',
      'payload_base64',
      'payload_hmac',
      'payload_json_validate',
      'payload_jwt_inspect',
      'payload_text_diff',
      'payload_pipeline',
      'payload_inspect',
    ])
    for (const [i, tool] of catalog.entries()) {
      const listed = tools[i]
      expect(listed?.inputSchema).toEqual(toolInputSchema(tool))
      expect(listed?.outputSchema?.type).toBe('object')
      expect(listed?.annotations).toMatchObject({
        readOnlyHint: true,
        idempotentHint: true,
        openWorldHint: false,
      })
      expect(listed?._meta?.['x402/price']).toEqual({
        amount: tool.price,
        currency: 'USDC',
        decimals: 6,
        display: tool.price === '1000' ? '0.001 USDC' : '0.003 USDC',
        scheme: 'exact',
        networks: ['eip155:8453', stack.solana.network],
      })
    }
    await mcp.ping()
    expect(events).toEqual([])
  })
})

describe('MCP unknown tool', () => {
  it('answers a mistyped name with -32602 naming the closest tool and every tool, for free', async () => {
    events.length = 0
    const error = await call('payload_hsah', { input: 'abc' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(McpError)
    expect((error as McpError).code).toBe(-32602)
    expect((error as McpError).message).toBe(
      'MCP error -32602: Unknown tool: payload_hsah. Did you mean payload_hash? The tools are payload_hash, payload_base64, payload_hmac, payload_json_validate, payload_jwt_inspect, payload_text_diff, payload_pipeline, payload_inspect (tools/list describes them).',
    )
    expect((error as McpError).data).toEqual({
      tools: catalog.map((t) => t.mcpName),
      suggestion: 'payload_hash',
    })
    const far = await call('weather', {}).catch((e: unknown) => e)
    expect((far as McpError).message).toBe(
      `MCP error -32602: Unknown tool: weather. The tools are ${catalog.map((t) => t.mcpName).join(', ')} (tools/list describes them).`,
    )
    expect(events).toEqual([])
  })
})

describe.each(['evm', 'solana'] as const)('every MCP tool paid on the %s rail', (rail) => {
  it.each(catalog.map((t) => [t.mcpName, t] as const))(
    '%s: unpaid -> PaymentRequired; paid -> result, receipt, payTo +price',
    async (name, tool) => {
      const before = await payToBalance(rail)
      const { required, payment } = await signPayment(name, tool.examples[0], rail)
      expect(required.x402Version).toBe(2)
      expect(required.resource.url).toBe(`${svc.baseUrl}/mcp`)
      expect(required.accepts.map((a) => [a.scheme, a.network, a.amount])).toEqual([
        ['exact', 'eip155:8453', tool.price],
        ['exact', stack.solana.network, tool.price],
      ])
      const bazaar = required.extensions?.bazaar as { info: { input: Record<string, unknown> } }
      expect(bazaar.info.input).toMatchObject({
        type: 'mcp',
        tool: name,
        toolName: name,
        transport: 'streamable-http',
        inputSchema: toolInputSchema(tool),
      })
      expect(await payToBalance(rail)).toBe(before)

      const paid = await call(name, tool.examples[0], payment)
      const envelope = { ok: true, result: expectedResult(tool) }
      expect(paid.isError).toBeUndefined()
      expect(paid.structuredContent).toEqual(envelope)
      expect(paid.content).toEqual([{ type: 'text', text: JSON.stringify(envelope) }])
      const receipt = paid._meta?.['x402/payment-response'] as SettleResponse
      expect(receipt.success).toBe(true)
      expect(receipt.network).toBe(networkOf(rail))
      expect(receipt.transaction).not.toBe('')
      expect((await payToBalance(rail)) - before).toBe(BigInt(tool.price))
    },
  )
})

describe.each(['evm', 'solana'] as const)('a paid MCP result on the %s rail', (rail) => {
  it('carries a compact _meta (< 1,500 bytes) whose receipt verifies at /receipts/verify', async () => {
    const args = { input: 'abc' }
    const { payment } = await signPayment('payload_hash', args, rail, 0)
    const paid = await call('payload_hash', args, payment)
    expect(paid.isError).toBeUndefined()
    // Before the compact form: 2,578 bytes (Base) and 2,771 (Solana) for this call.
    expect(Buffer.byteLength(JSON.stringify(paid._meta))).toBeLessThan(1500)
    const settled = paid._meta?.['x402/payment-response'] as SettleResponse
    // SHA-256 of {"algorithm":"SHA-256","input":"abc"} and of the result, in RFC 8785 form.
    const digests = {
      input_sha256: 'd64b45a5c6feb181323c2f2c81bd1ccc8d1f839d88bad2740c347d412404f15f',
      result_sha256: '52026ee2f8d374b5096e5ddcc30346478aec9d4f9422fa9505a32ce43b9820b7',
    }
    expect(paid._meta).toEqual({
      'x402/payment-response': {
        success: true,
        payer: rail === 'evm' ? stack.evm.payers[0]?.address : stack.solana.payers[0]?.address,
        transaction: expect.stringMatching(
          rail === 'evm' ? /^0x[0-9a-f]{64}$/ : /^[1-9A-HJ-NP-Za-km-z]{86,88}$/,
        ),
        network: networkOf(rail),
        extensions: {
          'delivery-receipt': {
            info: { receipt: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/), ...digests },
          },
        },
      },
    })
    const { receipt } = (settled.extensions as Record<string, { info: { receipt: string } }>)[
      'delivery-receipt'
    ]?.info ?? { receipt: '' }
    const { result } = paid.structuredContent as { result: unknown }
    const res = await fetch(`${svc.baseUrl}/receipts/verify`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ receipt, input: args, result }),
    })
    const verdict = await json(res)
    expect(verdict.valid).toBe(true)
    expect(verdict.checks).toEqual({ input: 'match', result: 'match', recomputed: 'match' })
    expect(verdict.claims).toMatchObject({
      ...digests,
      tool: 'hash',
      resource: `${svc.baseUrl}/mcp`,
      network: networkOf(rail),
      transaction: settled.transaction,
    })
  })
})

describe('MCP paid calls on the devnet', () => {
  it.each(['evm', 'solana'] as const)(
    'replays a repeated %s payment for the same arguments without a second transfer, and refuses it for others',
    async (rail) => {
      const { payment } = await signPayment('payload_hash', { input: 'replay' }, rail, 1)
      const before = await payToBalance(rail)
      const first = await call('payload_hash', { input: 'replay' }, payment)
      expect(first.isError).toBeUndefined()
      const replay = await call('payload_hash', { input: 'replay' }, payment)
      expect(replay.isError).toBeUndefined()
      expect(replay.structuredContent).toEqual(first.structuredContent)
      const settled = (replay._meta?.['x402/payment-response'] ?? {}) as SettleResponse
      expect(settled.transaction).toBe(
        (first._meta?.['x402/payment-response'] as SettleResponse | undefined)?.transaction,
      )
      const other = await call('payload_hash', { input: 'other' }, payment)
      expect(other.isError).toBe(true)
      expect(codeOf(other)).toBe('duplicate_settlement')
      expect((other.structuredContent as PaymentRequired).accepts).toHaveLength(2)
      expect(other._meta?.['x402/payment-response']).toBeUndefined()
      expect((await payToBalance(rail)) - before).toBe(1000n)
    },
  )

  it('does not charge a call whose tool fails, and keeps the payment usable', async () => {
    const payer = stack.evm.payers[1]?.address as `0x${string}`
    const payerBefore = await stack.evm.usdcBalance(payer)
    const payToBefore = await payToBalance('evm')
    const args = { mode: 'decode', input: 'ab*d' }
    const { payment } = await signPayment('payload_base64', args, 'evm', 1)
    const failed = await call('payload_base64', args, payment)
    expect(failed.isError).toBe(true)
    expect(codeOf(failed)).toBe('invalid_base64')
    expect((failed.structuredContent as { ok: boolean; code: string }).code).toBe('invalid_base64')
    expect(failed._meta?.['x402/payment-response']).toBeUndefined()
    expect(await stack.evm.usdcBalance(payer)).toBe(payerBefore)
    expect(await payToBalance('evm')).toBe(payToBefore)
    const retry = await call('payload_base64', { mode: 'decode', input: 'YWJj' }, payment)
    expect(retry.structuredContent).toMatchObject({ ok: true })
    expect(await stack.evm.usdcBalance(payer)).toBe(payerBefore - 1000n)
    expect(await payToBalance('evm')).toBe(payToBefore + 1000n)
  })

  it('stops a tool at its time budget: tool_timeout, nothing charged, as over HTTP', async () => {
    const payer = stack.evm.payers[1]?.address as `0x${string}`
    const payerBefore = await stack.evm.usdcBalance(payer)
    const payToBefore = await payToBalance('evm')
    // A backreference: V8's linear engine cannot run it, so it backtracks until it is stopped.
    const args = { value: `${'a'.repeat(28)}!`, schema: { type: 'string', pattern: '^(a*)*\\1$' } }
    const { payment } = await signPayment('payload_json_validate', args, 'evm', 1)
    events.length = 0
    const result = await call('payload_json_validate', args, payment)
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual({
      ok: false,
      request_id: expect.any(String),
      code: 'tool_timeout',
      error:
        'The tool did not finish within its 2000 ms budget and was stopped; nothing was charged',
    })
    expect(codeOf(result)).toBe('tool_timeout')
    expect(result._meta?.['x402/payment-response']).toBeUndefined()
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'tool_failed_unsettled'])
    expect(await stack.evm.usdcBalance(payer)).toBe(payerBefore)
    expect(await payToBalance('evm')).toBe(payToBefore)
  })

  it('rejects invalid arguments of a paid call without charging', async () => {
    const before = await payToBalance('solana')
    const { payment } = await signPayment('payload_pipeline', {}, 'solana', 1)
    const result = await call('payload_pipeline', { input: 'x', operations: [] }, payment)
    expect(result.isError).toBe(true)
    expect(codeOf(result)).toBe('invalid_request')
    expect(await payToBalance('solana')).toBe(before)
  })

  it('gives identical result objects for an HTTP payment and an MCP payment of every tool', async () => {
    const pay = await paidFetch(payerKeys(stack, 'evm', 2), 'evm')
    for (const tool of catalog) {
      const http = await pay(`${svc.baseUrl}${tool.path}`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(tool.examples[0]),
      })
      expect(http.status, tool.path).toBe(200)
      const { result: httpResult } = await json(http)
      const { payment } = await signPayment(tool.mcpName, tool.examples[0], 'evm', 2)
      const viaMcp = await call(tool.mcpName, tool.examples[0], payment)
      const { result: mcpResult } = viaMcp.structuredContent as { result: unknown }
      expect(mcpResult, tool.mcpName).toEqual(httpResult)
      expect(JSON.stringify(mcpResult)).toBe(JSON.stringify(httpResult))
    }
  })

  it('fails closed with facilitator_unavailable when the facilitator is down, and runs no tool', async () => {
    const { payment } = await signPayment('payload_hash', { input: 'down' }, 'evm', 0)
    events.length = 0
    await stack.stopFacilitator()
    try {
      const result = await call('payload_hash', { input: 'down' }, payment)
      expect(result.isError).toBe(true)
      expect(result.structuredContent).toEqual({
        ok: false,
        error: 'Payment facilitator is unavailable; nothing was run or charged',
        code: 'facilitator_unavailable',
        request_id: expect.any(String),
      })
      expect(events).toEqual([])
    } finally {
      await stack.startFacilitator()
    }
    const retry = await call('payload_hash', { input: 'down' }, payment)
    const hash = findToolByMcpName('payload_hash') as ToolDefinition
    expect(retry.structuredContent).toEqual({
      ok: true,
      result: hash.run(hash.input.parse({ input: 'down' }), clock),
    })
  })
})

describe('MCP endpoint over HTTP', () => {
  const initialize = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: {
      protocolVersion: '2025-11-25',
      capabilities: {},
      clientInfo: { name: 'e2e', version: '1' },
    },
  })
  const post = (headers: Record<string, string>) =>
    fetch(`${svc.baseUrl}/mcp`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...headers,
      },
      body: initialize,
    })

  /** fetch cannot set Host (a forbidden header), so the rebound request goes via node:http. */
  const postWithHost = (host: string) =>
    new Promise<number>((resolve, reject) => {
      const url = new URL(`${svc.baseUrl}/mcp`)
      const req = request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            Host: host,
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
          },
        },
        (res) => {
          res.resume()
          resolve(res.statusCode ?? 0)
        },
      )
      req.on('error', reject)
      req.end(initialize)
    })

  it('refuses a rebound Host and a foreign Origin with 403', async () => {
    expect(await postWithHost('evil.test')).toBe(403)
    expect(await postWithHost(new URL(svc.baseUrl).host)).toBe(200)
    expect((await post({ Origin: 'https://evil.test' })).status).toBe(403)
    const ok = await post({ Origin: svc.baseUrl })
    expect(ok.status).toBe(200)
    expect(ok.headers.get('mcp-session-id')).toBeNull()
  })

  it('answers GET /mcp with 405 (stateless: no SSE stream)', async () => {
    const res = await fetch(`${svc.baseUrl}/mcp`, { headers: { Accept: 'text/event-stream' } })
    expect(res.status).toBe(405)
    expect(res.headers.get('allow')).toBe('POST, OPTIONS')
  })
})
