import type { AddressInfo } from 'node:net'
import { serve } from '@hono/node-server'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createMetrics, createMetricsApp } from '../metrics/index.js'
import { waitFor } from './child.js'
import { type Prometheus, prometheusConfig, startPrometheus } from './prometheus.js'

// Debian's Prometheus scraping a metrics listener of ours with the bearer token, as `npm run
// cluster` runs it.

const TOKEN = 'prometheus-test-token-0123456789abcdef'
const metrics = createMetrics({ tools: ['hash'], networks: ['eip155:8453'] })
let server: ReturnType<typeof serve>
let target: string
let prometheus: Prometheus

beforeAll(async () => {
  server = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve(
      { fetch: createMetricsApp(metrics, { token: TOKEN }).fetch, port: 0, hostname: '127.0.0.1' },
      () => resolve(s),
    )
  })
  target = `127.0.0.1:${(server.address() as AddressInfo).port}`
  metrics.settledAtomic('eip155:8453', '3000')
  prometheus = await startPrometheus({ targets: [target], token: TOKEN })
})
afterAll(async () => {
  await prometheus?.stop()
  await new Promise((resolve) => server?.close(resolve))
})

/** The value of an instant query with a single result, or undefined. */
async function query(expr: string): Promise<string | undefined> {
  const res = await fetch(`${prometheus.url}/api/v1/query?query=${encodeURIComponent(expr)}`)
  const body = (await res.json()) as { data: { result: { value: [number, string] }[] } }
  return body.data.result[0]?.value[1]
}

describe('startPrometheus', () => {
  it('writes one job with the bearer token from a file and the shipped rules', () => {
    expect(
      JSON.parse(prometheusConfig({ targets: ['h:1'], tokenFile: '/t', rulesFile: '/r.yml' })),
    ).toEqual({
      global: { scrape_interval: '5s', evaluation_interval: '5s' },
      rule_files: ['/r.yml'],
      scrape_configs: [
        {
          job_name: 'payload-tools',
          metrics_path: '/metrics',
          authorization: { type: 'Bearer', credentials_file: '/t' },
          static_configs: [{ targets: ['h:1'] }],
        },
      ],
    })
  })

  it('scrapes the target with the token and loads the alerting rules', async () => {
    await waitFor('first scrape', async () => (await query('up{job="payload-tools"}')) === '1', {
      timeoutMs: 30_000,
      intervalMs: 500,
    })
    expect(await query('x402_settled_atomic_total{network="eip155:8453"}')).toBe('3000')
    const rules = (await (await fetch(`${prometheus.url}/api/v1/rules`)).json()) as {
      data: { groups: { name: string; rules: { name: string; health: string }[] }[] }
    }
    const group = rules.data.groups.find((g) => g.name === 'payload-tools')
    expect(group?.rules.map((r) => r.name)).toContain('PayloadToolsNoSettledPayments')
  })
})
