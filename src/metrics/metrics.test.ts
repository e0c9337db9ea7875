import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { createMetrics, MAX_LABEL_VALUES, type Metrics } from './metrics.js'

const BASE = 'eip155:8453'
const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

/** The exposition's sample lines of `name` (exactly that metric name), label text -> value. */
async function samples(metrics: Metrics, name: string): Promise<Record<string, number>> {
  const { body } = await metrics.scrape()
  const out: Record<string, number> = {}
  for (const line of body.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$/.exec(line)
    if (match && match[1] === name) out[match[2] ?? ''] = Number(match[3])
  }
  return out
}

const fresh = () => createMetrics({ tools: ['hash', 'hmac'], networks: [BASE, SOLANA] })

describe('createMetrics', () => {
  it('counts payments by tool, network, transport, outcome and code, and the revenue', async () => {
    const metrics = fresh()
    metrics.payment({ tool: 'hash', network: BASE, transport: 'http', outcome: 'settled' })
    metrics.payment({ tool: 'hash', network: BASE, transport: 'http', outcome: 'settled' })
    metrics.settledAtomic(BASE, '1000')
    metrics.settledAtomic(BASE, 2500n)
    metrics.payment({
      tool: 'hmac',
      network: SOLANA,
      transport: 'mcp',
      outcome: 'verify_failed',
      code: 'insufficient_funds',
    })
    metrics.payment({
      tool: 'hash',
      network: 'unknown',
      transport: 'http',
      outcome: 'refused',
      code: 'invalid_payment',
    })
    const payments = await samples(metrics, 'x402_payments_total')
    expect(
      payments[`{tool="hash",network="${BASE}",transport="http",outcome="settled",code=""}`],
    ).toBe(2)
    expect(
      payments[
        `{tool="hmac",network="${SOLANA}",transport="mcp",outcome="verify_failed",code="insufficient_funds"}`
      ],
    ).toBe(1)
    expect(
      payments[
        '{tool="hash",network="unknown",transport="http",outcome="refused",code="invalid_payment"}'
      ],
    ).toBe(1)
    // Created at zero for every tool, network and transport: 2 × 2 × 2 settled series.
    const settledSeries = Object.keys(payments).filter((k) => k.includes('outcome="settled"'))
    expect(settledSeries).toHaveLength(8)
    expect(await samples(metrics, 'x402_settled_atomic_total')).toEqual({
      [`{network="${BASE}"}`]: 3500,
      [`{network="${SOLANA}"}`]: 0,
    })
  })

  it('bounds every label: unknown tools and networks, bad or surplus codes become "other"', async () => {
    const metrics = fresh()
    const pay = (tool: string, network: string, code: string) =>
      metrics.payment({ tool, network, transport: 'http', outcome: 'refused', code })
    pay('../../etc', '0xdeadbeef', 'invalid_payment')
    pay('hash', BASE, 'Not A Code {"x":1}')
    for (let i = 0; i < MAX_LABEL_VALUES + 10; i++) pay('hash', BASE, `code_${i}`)
    metrics.settledAtomic('eip155:1', '5')
    const refused = Object.entries(await samples(metrics, 'x402_payments_total')).filter(([k]) =>
      k.includes('refused'),
    )
    expect(refused).toContainEqual([
      '{tool="other",network="other",transport="http",outcome="refused",code="invalid_payment"}',
      1,
    ])
    const codes = new Set(refused.map(([k]) => /code="([^"]*)"/.exec(k)?.[1]))
    // invalid_payment and the first codes up to the cap; the bad one and the surplus: "other".
    expect(codes.size).toBe(MAX_LABEL_VALUES + 1)
    expect(codes.has('other')).toBe(true)
    expect(codes.has(`code_${MAX_LABEL_VALUES + 5}`)).toBe(false)
    expect((await samples(metrics, 'x402_settled_atomic_total'))['{network="other"}']).toBe(5)
  })

  it('times facilitator requests, tool runs, Redis commands and telemetry writes', async () => {
    const metrics = fresh()
    metrics.facilitatorRequest({
      facilitator: 'x402.example.com',
      operation: 'settle',
      result: 'success',
      seconds: 0.3,
    })
    metrics.toolRun({ tool: 'hash', outcome: 'ok', seconds: 0.0004 })
    metrics.toolRun({ tool: 'evil', outcome: 'timeout', seconds: 2 })
    metrics.redisCommand({ command: 'evalsha', result: 'error', seconds: 0.5 })
    metrics.telemetryWrite({ result: 'ok', seconds: 0.004 })
    expect(await samples(metrics, 'x402_facilitator_request_duration_seconds_sum')).toEqual({
      '{facilitator="x402.example.com",operation="settle",result="success"}': 0.3,
    })
    expect(
      await samples(metrics, 'x402_facilitator_request_duration_seconds_bucket'),
    ).toMatchObject({
      '{le="0.25",facilitator="x402.example.com",operation="settle",result="success"}': 0,
      '{le="0.5",facilitator="x402.example.com",operation="settle",result="success"}': 1,
    })
    expect(await samples(metrics, 'tool_run_duration_seconds_count')).toEqual({
      '{tool="hash",outcome="ok"}': 1,
      '{tool="other",outcome="timeout"}': 1,
    })
    expect(await samples(metrics, 'redis_command_duration_seconds_count')).toEqual({
      '{command="evalsha",result="error"}': 1,
    })
    expect(await samples(metrics, 'telemetry_write_duration_seconds_count')).toEqual({
      '{result="ok"}': 1,
    })
  })

  it('counts pool rejections and 429s from zero', async () => {
    const metrics = fresh()
    expect(await samples(metrics, 'tool_pool_rejections_total')).toEqual({
      '{reason="admission"}': 0,
      '{reason="queue"}': 0,
    })
    expect(await samples(metrics, 'rate_limited_total')).toEqual({ '': 0 })
    metrics.poolRejection('queue')
    metrics.rateLimited()
    metrics.rateLimited()
    expect((await samples(metrics, 'tool_pool_rejections_total'))['{reason="queue"}']).toBe(1)
    expect(await samples(metrics, 'rate_limited_total')).toEqual({ '': 2 })
  })

  it('reads the gauges at each scrape, and exports only those given a source', async () => {
    const metrics = fresh()
    expect(await samples(metrics, 'tool_pool_busy_workers')).toEqual({})
    expect(await samples(metrics, 'redis_up')).toEqual({})
    let busy = 1
    metrics.watch({
      pool: () => ({ busy, queued: 3, workers: 2 }),
      telemetry: () => ({ up: false, buffered: 7 }),
    })
    expect(await samples(metrics, 'tool_pool_busy_workers')).toEqual({ '': 1 })
    busy = 2
    expect(await samples(metrics, 'tool_pool_busy_workers')).toEqual({ '': 2 })
    expect(await samples(metrics, 'tool_pool_queue_depth')).toEqual({ '': 3 })
    expect(await samples(metrics, 'tool_pool_workers')).toEqual({ '': 2 })
    expect(await samples(metrics, 'telemetry_store_up')).toEqual({ '': 0 })
    expect(await samples(metrics, 'telemetry_buffered_events')).toEqual({ '': 7 })
    expect(await samples(metrics, 'redis_up')).toEqual({})
    metrics.watch({ redis: () => ({ up: true }) })
    expect(await samples(metrics, 'redis_up')).toEqual({ '': 1 })
    expect(await samples(metrics, 'settlements_unresolved')).toEqual({})
    metrics.watch({ settlements: () => ({ unresolved: 3 }) })
    expect(await samples(metrics, 'settlements_unresolved')).toEqual({ '': 3 })
  })

  it("exports prom-client's default process metrics", async () => {
    const { body, contentType } = await fresh().scrape()
    expect(contentType).toBe('text/plain; version=0.0.4; charset=utf-8')
    for (const name of [
      'process_cpu_seconds_total',
      'process_resident_memory_bytes',
      'nodejs_eventloop_lag_seconds',
      'nodejs_eventloop_lag_p99_seconds',
      'nodejs_heap_size_used_bytes',
      'nodejs_gc_duration_seconds',
    ]) {
      expect(body).toContain(`# TYPE ${name} `)
    }
  })

  it('keeps two services in one process apart (a registry each)', async () => {
    const a = fresh()
    const b = fresh()
    a.rateLimited()
    expect(await samples(a, 'rate_limited_total')).toEqual({ '': 1 })
    expect(await samples(b, 'rate_limited_total')).toEqual({ '': 0 })
  })

  it('labels HTTP requests by route pattern, never by the path requested', async () => {
    const metrics = fresh()
    const app = new Hono()
    app.use(metrics.http)
    app.use(async (c, next) => (c.req.header('x-refuse') ? c.text('no', 429) : next()))
    app.post('/hash', (c) => c.text('pay', 402))
    app.get('/items/:id', (c) => c.text('ok'))
    await app.request('/hash', { method: 'POST' })
    await app.request('/items/0x857b06519E91e3A54538791bDbb0E22373e36b66')
    await app.request('/no/such/path?token=secret')
    await app.request('/hash', { method: 'POST', headers: { 'x-refuse': '1' } })
    expect(await samples(metrics, 'http_request_duration_seconds_count')).toEqual({
      '{method="POST",route="/hash",status="402",ok="false"}': 1,
      '{method="GET",route="/items/:id",status="200",ok="true"}': 1,
      '{method="GET",route="/*",status="404",ok="false"}': 1,
      '{method="POST",route="/*",status="429",ok="false"}': 1,
    })
  })
})
