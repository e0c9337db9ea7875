import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import { createPublicClient, createWalletClient, erc20Abi, http } from 'viem'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { base } from 'viem/chains'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SYSTEM_REDIS_URL } from '../src/devnet/redis.js'
import { USDC_ADDRESS } from '../src/devnet/usdc.js'
import type { Metrics } from '../src/metrics/index.js'
import { createTelemetry, type Stats, type Telemetry } from '../src/telemetry/index.js'
import { catalog } from '../src/tools/catalog.js'
import type { ToolDefinition, ToolEnv } from '../src/tools/types.js'
import { paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { parseExposition, type Sample, total } from './helpers/metrics.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, startDevService, TEST_TOOL_WORKERS } from './helpers/service.js'

// The operator metrics against the chain and /stats: paid calls on both rails over HTTP and MCP,
// and every failure that can be had today (a tool failure, an invalid body, a verify failure for
// insufficient funds, a settle failure after the payer emptied its wallet between verify and
// settle), then one scrape of /metrics. The counters must equal the payTo balance increases and
// /stats, per network.

const TOKEN = 'metrics-e2e-token-0123456789abcdef'
const POINTS = 60
const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
const tool = (id: string) => catalog.find((t) => t.id === id) as ToolDefinition
/** The payer whose wallet is emptied between verify and settle (a settle failure). */
const DRAINER = 3

let dev: DevService
let telemetry: Telemetry
let dataDir: string
let metrics: Metrics | undefined
const before: Record<Rail, bigint> = { evm: 0n, solana: 0n }
/** Settled calls and atomic amounts this test made, per rail. */
const settled: Record<Rail, { calls: number; atomic: bigint }> = {
  evm: { calls: 0, atomic: 0n },
  solana: { calls: 0, atomic: 0n },
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'metrics-e2e-'))
  // The telemetry write is timed into the service's metrics, which exist once it is started.
  telemetry = await createTelemetry({
    dataDir,
    salt: 'metrics-e2e-salt-0123',
    cacheMs: 0,
    onWrite: (write) => metrics?.telemetryWrite(write),
  })
  // A stack of its own: a test here drains a payer's wallet.
  dev = await startDevService({
    payers: 4,
    clock,
    ownStack: true,
    env: { METRICS_TOKEN: TOKEN, REDIS_URL: SYSTEM_REDIS_URL, RATE_LIMIT_POINTS: String(POINTS) },
    overrides: {
      telemetry,
      rateLimitKeyPrefix: `metrics-e2e:${process.pid}:${Date.now()}`,
    },
  })
  metrics = dev.svc.service.metrics
  for (const rail of ['evm', 'solana'] as const) before[rail] = await payToBalance(dev.stack, rail)
})
afterAll(async () => {
  await dev?.stop()
  await telemetry?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** Sends the payer's whole USDC balance away (the burn address), on anvil. */
async function drain(privateKey: `0x${string}`): Promise<void> {
  const transport = http(dev.stack.evm.rpcUrl)
  const account = privateKeyToAccount(privateKey)
  const wallet = createWalletClient({ account, chain: base, transport })
  const reader = createPublicClient({ chain: base, transport, pollingInterval: 50 })
  const balance = await dev.stack.evm.usdcBalance(account.address)
  const hash = await wallet.writeContract({
    address: USDC_ADDRESS,
    abi: erc20Abi,
    functionName: 'transfer',
    args: ['0x000000000000000000000000000000000000dEaD', balance],
  })
  await reader.waitForTransactionReceipt({ hash })
}

const url = (path: string) => `${dev.svc.baseUrl}${path}`
const postJson = (body: unknown) => ({
  method: 'POST',
  headers: { 'Content-Type': 'application/json' },
  body: JSON.stringify(body),
})

/** A paid HTTP call with the official client; counts it when it settled. */
async function payHttp(rail: Rail, t: ToolDefinition, body: unknown, payer = 0): Promise<Response> {
  const pay = await paidFetch(payerKeys(dev.stack, rail, payer), rail)
  const res = await pay(url(t.path), postJson(body))
  if (res.status === 200) {
    settled[rail].calls++
    settled[rail].atomic += BigInt(t.price)
  }
  return res
}

/** A `tools/call` as raw JSON-RPC over HTTP; the result, or the JSON-RPC error. */
async function mcpCall(t: ToolDefinition, args: unknown, payment?: PaymentPayload) {
  const res = await fetch(url('/mcp'), {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: t.mcpName,
        arguments: args,
        ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
      },
    }),
  })
  const answer = (await res.json()) as {
    result: { isError?: boolean; structuredContent: Record<string, unknown> }
  }
  return answer.result
}

/** A paid MCP call: unpaid first, then signed with the official client; counted when settled. */
async function payMcp(rail: Rail, t: ToolDefinition, args: unknown, payer = 0) {
  const unpaid = await mcpCall(t, args)
  const client = await payerClient(payerKeys(dev.stack, rail, payer), rail)
  const payment = await client.createPaymentPayload(
    unpaid.structuredContent as unknown as PaymentRequired,
  )
  const result = await mcpCall(t, args, payment)
  if (!result.isError) {
    settled[rail].calls++
    settled[rail].atomic += BigInt(t.price)
  }
  return result
}

async function scrape(): Promise<Sample[]> {
  const res = await fetch(url('/metrics'), { headers: { Authorization: `Bearer ${TOKEN}` } })
  expect(res.status).toBe(200)
  return parseExposition(await res.text())
}

describe('operator metrics on the devnet', () => {
  it('counts paid calls and failures of every kind available today', async () => {
    const hash = tool('hash')
    const pipeline = tool('pipeline')
    const base64 = tool('base64')
    expect((await payHttp('evm', hash, { input: 'm1' })).status).toBe(200)
    expect((await payHttp('evm', pipeline, pipeline.examples[0])).status).toBe(200)
    expect((await payHttp('solana', hash, { input: 'm2' })).status).toBe(200)
    expect((await payMcp('evm', hash, { input: 'm3' }, 1)).isError).toBeUndefined()
    expect((await payMcp('solana', pipeline, pipeline.examples[0], 1)).isError).toBeUndefined()

    // A tool failure: verified, not settled.
    const toolFailure = await payHttp('solana', base64, { mode: 'decode', input: 'ab*d' }, 2)
    expect([toolFailure.status, (await json(toolFailure)).code]).toEqual([400, 'invalid_base64'])
    // An invalid body: refused before verify.
    const invalid = await payHttp('evm', hash, { input: 'x', extra: 1 }, 2)
    expect([invalid.status, (await json(invalid)).code]).toEqual([400, 'invalid_request'])
    // A verify failure: a payer with no USDC.
    const broke = await paidFetch({ evmPrivateKey: generatePrivateKey() }, 'evm')
    const rejected = await broke(url(hash.path), postJson({ input: 'broke' }))
    expect([rejected.status, (await json(rejected)).code]).toEqual([
      402,
      'payment_verification_failed',
    ])
    // A settle failure: verified, run, then the wallet is empty when settlement comes.
    // (Not on the service's `verified` event: the gate does not wait for its observers there.)
    const faults = dev.stack.facilitators[0]?.faults
    if (!faults) throw new Error('no facilitator')
    faults.beforeNextSettle = () =>
      drain(dev.stack.evm.payers[DRAINER]?.privateKey as `0x${string}`)
    const unsettled = await payHttp('evm', hash, { input: 'drained' }, DRAINER)
    expect([unsettled.status, (await json(unsettled)).code]).toEqual([402, 'settlement_failed'])

    expect(dev.events.map((e) => e.outcome).filter((o) => o !== 'verified')).toEqual([
      'settled',
      'settled',
      'settled',
      'settled',
      'settled',
      'tool_failed_unsettled',
      'settle_failed',
    ])
  })

  it('agrees with the chain and /stats, per network', async () => {
    const samples = await scrape()
    const stats = (await json(await fetch(url('/stats')))) as Stats
    for (const rail of ['evm', 'solana'] as const) {
      const network = rail === 'evm' ? 'eip155:8453' : dev.stack.solana.network
      const increase = (await payToBalance(dev.stack, rail)) - before[rail]
      expect(increase).toBe(settled[rail].atomic)
      const calls = total(samples, 'x402_payments_total', { outcome: 'settled', network })
      const revenue = total(samples, 'x402_settled_atomic_total', { network })
      expect([calls, revenue]).toEqual([settled[rail].calls, Number(increase)])
      expect(stats.networks[network]).toEqual({
        calls: settled[rail].calls,
        revenue: { atomic: String(increase), usdc: expect.any(String) },
      })
    }
    expect(total(samples, 'x402_payments_total', { outcome: 'settled' })).toBe(
      stats.successful_paid_calls,
    )
    expect(total(samples, 'x402_settled_atomic_total')).toBe(Number(stats.revenue.lifetime.atomic))
    const outcome = (o: string, labels: Record<string, string> = {}) =>
      total(samples, 'x402_payments_total', { outcome: o, ...labels })
    expect(outcome('settled', { transport: 'mcp' })).toBe(2)
    expect(outcome('settled', { tool: 'pipeline' })).toBe(2)
    expect(outcome('tool_failed_unsettled', { tool: 'base64', transport: 'http' })).toBe(1)
    expect(outcome('settle_failed', { network: 'eip155:8453' })).toBe(1)
    // Verified calls: the settled ones, the tool failure and the settle failure.
    expect(stats.paid_calls).toBe(7)
  })

  it('times the facilitator, the tools, Redis, telemetry and HTTP by bounded labels', async () => {
    const samples = await scrape()
    const facilitator = new URL(dev.stack.facilitatorUrl).host
    const requests = (operation: string, result: string) =>
      total(samples, 'x402_facilitator_request_duration_seconds_count', {
        facilitator,
        operation,
        result,
      })
    // verify: 5 settled + tool failure + settle failure valid, the broke payer rejected; the
    // invalid body never reached the facilitator.
    expect([requests('verify', 'success'), requests('verify', 'rejected')]).toEqual([7, 1])
    expect(requests('settle', 'success')).toBe(5)
    expect(requests('settle', 'rejected') + requests('settle', 'error')).toBe(1)
    expect(requests('supported', 'success')).toBeGreaterThanOrEqual(1)
    const runs = (labels: Record<string, string>) =>
      total(samples, 'tool_run_duration_seconds_count', labels)
    expect(runs({ outcome: 'ok' })).toBe(6)
    expect(runs({ tool: 'base64', outcome: 'tool_error' })).toBe(1)
    expect(total(samples, 'tool_pool_workers')).toBe(Number(TEST_TOOL_WORKERS))
    expect(total(samples, 'tool_pool_busy_workers')).toBe(0)
    expect(total(samples, 'tool_pool_queue_depth')).toBe(0)
    // Two writes (verified, final) per verified call, all committed.
    expect(total(samples, 'telemetry_write_duration_seconds_count', { result: 'ok' })).toBe(14)
    expect(total(samples, 'telemetry_write_duration_seconds_count', { result: 'error' })).toBe(0)
    expect(total(samples, 'telemetry_store_up')).toBe(1)
    expect(total(samples, 'redis_up')).toBe(1)
    expect(
      total(samples, 'redis_command_duration_seconds_count', { result: 'ok' }),
    ).toBeGreaterThan(0)
    const http = (labels: Record<string, string>) =>
      total(samples, 'http_request_duration_seconds_count', labels)
    expect(http({ method: 'POST', route: '/hash', status: '200' })).toBe(2)
    expect(http({ method: 'POST', route: '/mcp', status: '200' })).toBe(4)
    expect(http({ method: 'POST', route: '/hash', status: '402' })).toBeGreaterThanOrEqual(6)
    // Bounded labels: no payer address in any spelling, no path with input, no id.
    const values = samples
      .flatMap((s) => Object.values(s.labels))
      .join('\n')
      .toLowerCase()
    const payers = [
      ...dev.stack.evm.payers.map((p) => p.address),
      ...dev.stack.solana.payers.map((p) => p.address),
    ]
    for (const payer of payers) expect(values).not.toContain(payer.toLowerCase())
    const routes = new Set(
      samples.filter((s) => s.name.startsWith('http_request')).map((s) => s.labels.route),
    )
    for (const route of routes)
      expect(['/hash', '/pipeline', '/base64', '/mcp', '/stats', '/metrics', '/*']).toContain(route)
  })

  // A failed verify, a replay and a refusal before verify are the gate's notes (PaymentNote), which
  // src/service.ts counts with their code.
  it('counts verify_failed, replayed and refused with their code', async () => {
    const hash = tool('hash')
    const client = await payerClient(payerKeys(dev.stack, 'evm', 1), 'evm')
    const unpaid = await fetch(url(hash.path), postJson({ input: 'replay' }))
    const required = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED') ?? '')
    const header = encodePaymentSignatureHeader(await client.createPaymentPayload(required))
    const send = (input: string) =>
      fetch(url(hash.path), {
        ...postJson({ input }),
        headers: { 'Content-Type': 'application/json', 'PAYMENT-SIGNATURE': header },
      })
    expect((await send('replay')).status).toBe(200)
    settled.evm.calls++
    expect((await send('replay')).status).toBe(200)
    expect((await send('another')).status).toBe(402)
    const samples = await scrape()
    const count = (outcome: string, code?: string) =>
      total(samples, 'x402_payments_total', { outcome, ...(code ? { code } : {}) })
    expect(count('verify_failed')).toBe(1)
    expect(count('replayed')).toBe(1)
    expect(count('refused', 'duplicate_settlement')).toBe(1)
    expect(count('refused', 'invalid_request')).toBe(1)
  })

  it('serves /metrics only to the token, and never limits it', async () => {
    const hidden = await fetch(url('/metrics'))
    expect(hidden.status).toBe(404)
    expect(await json(hidden)).toEqual({
      ok: false,
      error: 'Not found',
      code: 'not_found',
      request_id: hidden.headers.get('x-request-id'),
    })
    // Spend the rest of this client's quota, then some: 429s, each counted.
    let refused = 0
    for (let i = 0; i < POINTS; i++) {
      if ((await fetch(url('/llms.txt'))).status === 429) refused++
    }
    expect(refused).toBeGreaterThan(0)
    // A scrape with the token still answers; one without is limited like any unknown path.
    const samples = await scrape()
    expect(total(samples, 'rate_limited_total')).toBe(refused)
    expect((await fetch(url('/metrics'))).status).toBe(429)
    expect(total(await scrape(), 'rate_limited_total')).toBe(refused + 1)
  })
})
