import {
  type CallToolResult,
  Client,
  ProtocolError,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { toolInputSchema } from '../src/descriptions/json-schema.js'
import { MCP_PROTOCOL_VERSIONS } from '../src/descriptions/service-info.js'
import type { DevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { catalog } from '../src/tools/catalog.js'
import type { ToolDefinition, ToolEnv } from '../src/tools/types.js'
import { payerClient } from './helpers/clients.js'
import { payerKeys, payToBalance as payToBalanceOn, type Rail } from './helpers/rails.js'
import { type DevService, type RunningService, startDevService } from './helpers/service.js'

// MCP protocol 2026-07-28 end to end: the v2 client (@modelcontextprotocol/client 2.4.0) pinned to
// 2026-07-28 (no initialize, no session: server/discover, then each request with its `_meta`
// envelope and the Mcp-Method/Mcp-Name headers) against /mcp of the service on the devnet, paying
// with the official x402Client on each rail; the same client in automatic mode; and the wire.

const MODERN = '2026-07-28'
const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
let stack: DevStack
let svc: RunningService
let events: PaymentEvent[]
let mcp: Client

const connect = async (mode: 'auto' | { pin: string }) => {
  const client = new Client(
    { name: 'mcp-2026-e2e', version: '1.0.0' },
    { versionNegotiation: { mode } },
  )
  await client.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`)))
  return client
}

beforeAll(async () => {
  dev = await startDevService({ payers: 2, clock })
  ;({ stack, svc, events } = dev)
  mcp = await connect({ pin: MODERN })
})
afterAll(async () => {
  await mcp?.close()
  await dev?.stop()
})

const networkOf = (rail: Rail) => (rail === 'evm' ? 'eip155:8453' : stack.solana.network)
const call = (name: string, args: unknown, payment?: PaymentPayload) =>
  mcp.callTool({
    name,
    arguments: args as Record<string, unknown>,
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  }) as Promise<CallToolResult>
const expectedResult = (tool: ToolDefinition) => tool.run(tool.input.parse(tool.examples[0]), clock)

/** One 2026-07-28 JSON-RPC request over plain fetch, with the headers the revision requires. */
const post = (
  method: string,
  params: Record<string, unknown>,
  headers: Record<string, string> = {},
) =>
  fetch(`${svc.baseUrl}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'MCP-Protocol-Version': MODERN,
      'Mcp-Method': method,
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method,
      params: {
        ...params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': MODERN,
          'io.modelcontextprotocol/clientCapabilities': {},
          'io.modelcontextprotocol/clientInfo': { name: 'fetch', version: '1' },
        },
      },
    }),
  })

describe('MCP 2026-07-28: discovery', () => {
  it('pins the v2 client to 2026-07-28 through server/discover, with the versions served', async () => {
    expect(mcp.getNegotiatedProtocolVersion()).toBe(MODERN)
    const discovered = await mcp.discover()
    expect(discovered.supportedVersions).toContain(MODERN)
    expect(discovered.capabilities).toEqual({ tools: { listChanged: false } })
    expect(discovered.instructions).toMatch(/x402\/payment/)
    expect(discovered._meta?.['io.modelcontextprotocol/serverInfo']).toMatchObject({
      name: 'payload-tools',
    })
  })

  it('answers server/discover over the wire: JSON, no session id, cacheable', async () => {
    const res = await post('server/discover', {})
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toMatch(/^application\/json/)
    expect(res.headers.get('mcp-session-id')).toBeNull()
    const { result } = (await res.json()) as { result: Record<string, unknown> }
    expect(result).toMatchObject({
      resultType: 'complete',
      ttlMs: 300_000,
      cacheScope: 'public',
      capabilities: { tools: { listChanged: false } },
    })
    // The versions a client selects through server/discover; the 2025-era ones are reached by
    // initialize, as the SDK (2.4.0) serves them, and the server card lists them all.
    expect(result.supportedVersions).toEqual([MODERN])
    expect(MCP_PROTOCOL_VERSIONS).toEqual(
      expect.arrayContaining([MODERN, '2025-11-25', '2025-06-18']),
    )
  })

  it('refuses a 2026-07-28 request whose Mcp-Method header disagrees with its body', async () => {
    const res = await post('tools/list', {}, { 'Mcp-Method': 'tools/call' })
    expect(res.status).toBe(400)
    const body = (await res.json()) as { error: { code: number } }
    expect(body.error.code).toBe(-32020)
  })

  it('lists the tools in catalogue order with ttlMs and cacheScope, for free', async () => {
    events.length = 0
    const listed = await mcp.listTools()
    expect(listed.tools.map((t) => t.name)).toEqual(catalog.map((t) => t.mcpName))
    for (const [i, tool] of catalog.entries()) {
      expect(listed.tools[i]?.inputSchema).toEqual(toolInputSchema(tool))
    }
    const res = await post('tools/list', {})
    const { result } = (await res.json()) as { result: Record<string, unknown> }
    expect(result).toMatchObject({ ttlMs: 300_000, cacheScope: 'public', resultType: 'complete' })
    expect((result.tools as { name: string }[]).map((t) => t.name)).toEqual(
      catalog.map((t) => t.mcpName),
    )
    expect(events).toEqual([])
  })

  it('answers an unknown tool with -32602 naming the tools', async () => {
    const error = await call('payload_hsah', { input: 'abc' }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ProtocolError)
    expect((error as ProtocolError).code).toBe(-32602)
    expect((error as ProtocolError).data).toEqual({
      tools: catalog.map((t) => t.mcpName),
      suggestion: 'payload_hash',
    })
  })
})

describe.each(['evm', 'solana'] as const)('MCP 2026-07-28: paid on the %s rail', (rail) => {
  it('unpaid -> isError with the PaymentRequired; paid -> result and receipt, payTo +price', async () => {
    const tool = catalog.find((t) => t.mcpName === 'payload_hash') as ToolDefinition
    const before = await payToBalanceOn(stack, rail)
    const unpaid = await call(tool.mcpName, tool.examples[0])
    expect(unpaid.isError).toBe(true)
    const required = unpaid.structuredContent as PaymentRequired
    expect(required.x402Version).toBe(2)
    expect(required.resource.url).toBe(`${svc.baseUrl}/mcp`)
    expect(required.accepts.map((a) => a.network)).toEqual(['eip155:8453', stack.solana.network])
    expect(unpaid._meta?.['payload-tools/failure']).toMatchObject({ code: 'payment_required' })

    const client = await payerClient(payerKeys(stack, rail, 0), rail)
    const payment = await client.createPaymentPayload(required)
    const paid = await call(tool.mcpName, tool.examples[0], payment)
    const envelope = { ok: true, result: expectedResult(tool) }
    expect(paid.isError).toBeFalsy()
    expect(paid.structuredContent).toEqual(envelope)
    expect(paid.content).toEqual([{ type: 'text', text: JSON.stringify(envelope) }])
    const receipt = paid._meta?.['x402/payment-response'] as SettleResponse
    expect(receipt).toMatchObject({ success: true, network: networkOf(rail) })
    expect(receipt.transaction).not.toBe('')
    expect((await payToBalanceOn(stack, rail)) - before).toBe(BigInt(tool.price))
  })
})

describe('MCP 2025-era versions beside 2026-07-28', () => {
  it.each(['2025-11-25', '2025-06-18'])(
    'initializes at %s, statelessly, answering JSON',
    async (version) => {
      const res = await fetch(`${svc.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: {
            protocolVersion: version,
            capabilities: {},
            clientInfo: { name: 'fetch', version: '1' },
          },
        }),
      })
      expect(res.status).toBe(200)
      expect(res.headers.get('content-type')).toMatch(/^application\/json/)
      expect(res.headers.get('mcp-session-id')).toBeNull()
      const { result } = (await res.json()) as { result: Record<string, unknown> }
      expect(result.protocolVersion).toBe(version)
      expect(result.capabilities).toEqual({ tools: { listChanged: false } })
    },
  )
})

describe('MCP 2026-07-28: the v2 client in automatic mode', () => {
  it('selects 2026-07-28 and pays on the evm rail', async () => {
    const auto = await connect('auto')
    try {
      expect(auto.getNegotiatedProtocolVersion()).toBe(MODERN)
      const args = { input: 'auto' }
      const unpaid = (await auto.callTool({
        name: 'payload_hash',
        arguments: args,
      })) as CallToolResult
      const client = await payerClient(payerKeys(stack, 'evm', 1), 'evm')
      const payment = await client.createPaymentPayload(unpaid.structuredContent as PaymentRequired)
      const paid = (await auto.callTool({
        name: 'payload_hash',
        arguments: args,
        _meta: { 'x402/payment': payment },
      })) as CallToolResult
      expect(paid.structuredContent).toMatchObject({ ok: true })
      expect(paid._meta?.['x402/payment-response']).toMatchObject({ success: true })
    } finally {
      await auto.close()
    }
  })
})
