import { createHash } from 'node:crypto'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { decodePaymentResponseHeader } from '@x402/core/http'
import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { ToolEnv } from '../src/tools/types.js'
import { paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// Issue 30: a settle waits for a block and its receipt. On Base (blocks every 2 s, the official
// facilitator waiting for each receipt) it took 4.1 s, and the former 4 s timeout answered every
// call 503 settlement_unknown while its transfer landed. With the default configuration a settle
// of 8 s must be a 200 with its result, charged once, over HTTP and MCP, on both rails.

const SETTLE_DELAY_MS = 8_000
/** The hash tool's answer for `input`, computed here with node:crypto (FIPS 180-4 SHA-256). */
const sha256 = (input: string) => {
  const digest = createHash('sha256').update(input, 'utf8').digest()
  return {
    algorithm: 'SHA-256',
    hex: digest.toString('hex'),
    base64: digest.toString('base64'),
    input_bytes: Buffer.byteLength(input),
  }
}
const PRICE = 1000n
const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService

beforeAll(async () => {
  // The default FACILITATOR_TIMEOUT_MS and FACILITATOR_SETTLE_TIMEOUT_MS: nothing set here.
  dev = await startDevService({ payers: 2, clock })
})
afterAll(async () => {
  await dev?.stop()
})

/** The devnet facilitator's faults, switched on and off here. */
const faults = () => {
  const f = dev.stack.facilitators[0]?.faults
  if (!f) throw new Error('no facilitator')
  return f
}

/** Runs `call` while every settle takes SETTLE_DELAY_MS more at the facilitator. */
async function withSlowSettle<T>(call: () => Promise<T>): Promise<T> {
  faults().settleDelayMs = SETTLE_DELAY_MS
  try {
    return await call()
  } finally {
    faults().settleDelayMs = 0
  }
}

describe.each(['evm', 'solana'] as const)('a settle of 8 s on the %s rail', (rail: Rail) => {
  it('is a 200 with the result over HTTP, one transfer of the price', async () => {
    const before = await payToBalance(dev.stack, rail)
    const pay = await paidFetch(payerKeys(dev.stack, rail, 0), rail)
    const started = Date.now()
    const input = `slow settle ${rail}`
    const res = await withSlowSettle(() =>
      pay(`${dev.svc.baseUrl}/hash`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ input }),
      }),
    )
    // The settle really took the 8 s: the answer came after them.
    expect(Date.now() - started).toBeGreaterThanOrEqual(SETTLE_DELAY_MS)
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({ ok: true, result: sha256(input) })
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')
    expect(settlement.success).toBe(true)
    expect(await payToBalance(dev.stack, rail)).toBe(before + PRICE)
  }, 90_000)

  it('is a result over MCP, one transfer of the price', async () => {
    const mcp = new Client({ name: 'slow-settle', version: '1.0.0' })
    await mcp.connect(new StreamableHTTPClientTransport(new URL(`${dev.svc.baseUrl}/mcp`)))
    try {
      const args = { input: `slow settle mcp ${rail}` }
      const unpaid = (await mcp.callTool({
        name: 'payload_hash',
        arguments: args,
      })) as CallToolResult
      const client = await payerClient(payerKeys(dev.stack, rail, 1), rail)
      const payment = await client.createPaymentPayload(unpaid.structuredContent as PaymentRequired)
      const before = await payToBalance(dev.stack, rail)
      const paid = (await withSlowSettle(() =>
        mcp.callTool(
          { name: 'payload_hash', arguments: args, _meta: { 'x402/payment': payment } },
          undefined,
          { timeout: 60_000 },
        ),
      )) as CallToolResult
      expect(paid.isError).toBeUndefined()
      expect(paid.structuredContent).toEqual({ ok: true, result: sha256(args.input) })
      const settlement = paid._meta?.['x402/payment-response'] as SettleResponse
      expect(settlement.success).toBe(true)
      expect(await payToBalance(dev.stack, rail)).toBe(before + PRICE)
    } finally {
      await mcp.close()
    }
  }, 90_000)
})
