import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import type { PaymentRequired } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { payerClient } from './helpers/clients.js'
import { payerKeys, payToBalance } from './helpers/rails.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'

// Issue 17, "Paying clients keep their free quota", with the default limits (120 unpaid requests
// per 60 s): a client that pays for what it calls is never limited by its paid traffic, over HTTP
// (the official @x402/fetch wrapper) and MCP (the official MCP client, paying with the official
// x402 client); a client that only probes is limited as before. All clients are 127.0.0.1 here,
// so each one is told apart by the X-Forwarded-For the service trusts (TRUST_PROXY_HOPS=1), as
// behind the shipped nginx.

let stack: DevStack
let svc: RunningService

beforeAll(async () => {
  stack = await sharedDevStack()
  svc = await startService(stack, {
    RATE_LIMIT_POINTS: '120',
    RATE_LIMIT_DURATION_S: '60',
    TRUST_PROXY_HOPS: '1',
    TOOL_WORKERS: '2',
  })
}, 120_000)
afterAll(async () => {
  await svc?.stop()
})

const from = (client: string) => ({ 'X-Forwarded-For': client })

/** Runs `task(i)` for i < n, `concurrency` at a time; resolves with every result in order. */
async function pool<T>(n: number, concurrency: number, task: (i: number) => Promise<T>) {
  const results: T[] = new Array(n)
  let next = 0
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < n; i = next++) results[i] = await task(i)
    }),
  )
  return results
}

describe('the default rate limit and paying clients', () => {
  it('serves 300 paid calls of one client through @x402/fetch within the quota of 120, and its free requests after', async () => {
    const client = '198.51.100.10'
    const pay = wrapFetchWithPayment(fetch, await payerClient(payerKeys(stack, 'evm')))
    const before = await payToBalance(stack, 'evm')
    const started = Date.now()
    const statuses = await pool(300, 3, async (i) => {
      const res = await pay(`${svc.baseUrl}/hash`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...from(client) },
        body: JSON.stringify({ input: `call ${i}` }),
      })
      await res.arrayBuffer()
      return res.status
    })
    const seconds = (Date.now() - started) / 1000
    expect(statuses.filter((s) => s !== 200)).toEqual([])
    expect(await payToBalance(stack, 'evm')).toBe(before + 300n * 1000n)
    // Its free requests afterwards: a price read, discovery.
    for (const path of ['/openapi.json', '/capabilities', '/llms.txt']) {
      const res = await fetch(`${svc.baseUrl}${path}`, { headers: from(client) })
      expect(res.status, path).toBe(200)
    }
    const price = await fetch(`${svc.baseUrl}/hash`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', ...from(client) },
      body: '{"input":"price?"}',
    })
    expect(price.status).toBe(402)
    process.stdout.write(`[ratelimit-paying] 300 paid HTTP calls in ${seconds.toFixed(1)} s\n`)
  }, 300_000)

  it('serves 100 paid calls of one client through the official MCP client (initialize, list, unpaid and paid calls)', async () => {
    const headers = from('198.51.100.11')
    const mcp = new Client({ name: 'ratelimit-paying', version: '1.0.0' })
    await mcp.connect(
      new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`), {
        requestInit: { headers },
      }),
    )
    try {
      const x402 = await payerClient(payerKeys(stack, 'evm'))
      const before = await payToBalance(stack, 'evm')
      const codes: string[] = []
      for (let i = 0; i < 100; i++) {
        const args = { input: `mcp ${i}` }
        const unpaid = (await mcp.callTool({
          name: 'payload_hash',
          arguments: args,
        })) as CallToolResult
        const payment = await x402.createPaymentPayload(unpaid.structuredContent as PaymentRequired)
        const paid = (await mcp.callTool({
          name: 'payload_hash',
          arguments: args,
          _meta: { 'x402/payment': payment },
        })) as CallToolResult
        codes.push(
          paid.isError
            ? String((paid._meta?.['payload-tools/failure'] as { code?: string } | undefined)?.code)
            : 'ok',
        )
        if (i % 25 === 0) await mcp.listTools()
      }
      expect(codes.filter((c) => c !== 'ok')).toEqual([])
      expect(await payToBalance(stack, 'evm')).toBe(before + 100n * 1000n)
      expect((await mcp.listTools()).tools).toHaveLength(8)
    } finally {
      await mcp.close()
    }
  }, 300_000)

  it('still limits a client that only probes: 120 unpaid requests, then 429', async () => {
    const headers = { 'Content-Type': 'application/json', ...from('198.51.100.12') }
    const statuses = await pool(300, 4, async () => {
      const res = await fetch(`${svc.baseUrl}/hash`, {
        method: 'POST',
        headers,
        body: '{"input":"probe"}',
      })
      await res.arrayBuffer()
      return res.status
    })
    expect(statuses.filter((s) => s === 402)).toHaveLength(120)
    expect(statuses.filter((s) => s === 429)).toHaveLength(180)
  }, 120_000)
})
