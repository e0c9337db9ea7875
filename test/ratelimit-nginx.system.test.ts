import { mkdtempSync, rmSync } from 'node:fs'
import { request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { serve } from '@hono/node-server'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type Cluster, startCluster } from '../src/devnet/cluster.js'
import { type PrivateRedis, startPrivateRedis } from '../src/devnet/redis.js'
import { fakePayload } from './helpers/fakes.js'

// Rate limits on free work behind the shipped nginx (deploy/nginx.conf): two instances as
// separate processes with TRUST_PROXY_HOPS=1, sharing a private Redis (a fresh redis-server, so
// no key of another run or test is shared), and a small quota. The facilitator is a scripted
// stand-in that approves every payment, so a paid call through nginx needs no chain.

const POINTS = 6
const PAY_TO = '0x1111111111111111111111111111111111111111'

let redis: PrivateRedis
let cluster: Cluster
let facilitator: ReturnType<typeof serve>
let dir: string

/** A facilitator that supports `exact` on Base and approves and settles every payment. */
function approvingFacilitator(): Hono {
  const app = new Hono()
  const payer = '0x2222222222222222222222222222222222222222'
  app.get('/supported', (c) =>
    c.json({
      kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:8453' }],
      extensions: [],
      signers: {},
    }),
  )
  app.post('/verify', (c) => c.json({ isValid: true, payer }))
  app.post('/settle', (c) =>
    c.json({ success: true, transaction: `0x${'ab'.repeat(32)}`, network: 'eip155:8453', payer }),
  )
  return app
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'ratelimit-nginx-'))
  const [r, facilitatorUrl] = await Promise.all([
    startPrivateRedis(),
    new Promise<string>((resolve) => {
      facilitator = serve(
        { fetch: approvingFacilitator().fetch, port: 0, hostname: '127.0.0.1' },
        (info) => resolve(`http://127.0.0.1:${info.port}`),
      )
    }),
  ])
  redis = r
  cluster = await startCluster({
    instances: 2,
    dir,
    logLevel: 'warn',
    env: {
      FACILITATOR_URL: facilitatorUrl,
      PAY_TO_EVM: PAY_TO,
      REDIS_URL: redis.url,
      RATE_LIMIT_POINTS: String(POINTS),
      RATE_LIMIT_DURATION_S: '60',
      TRUST_PROXY_HOPS: '1',
      DATABASE_URL: join(dir, 'telemetry.sqlite'),
      TELEMETRY_SALT: 'ratelimit-nginx-test-salt',
      TOOL_WORKERS: '1',
    },
  })
}, 300_000)

afterAll(async () => {
  await cluster?.stop()
  await redis?.destroy()
  await new Promise((resolve) => (facilitator ? facilitator.close(resolve) : resolve(undefined)))
  if (dir) rmSync(dir, { recursive: true, force: true })
})

interface Answer {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: string
}

/**
 * One request with node:http, so that the source address can be chosen: every 127.0.0.0/8 address
 * is this machine, and nginx sees `localAddress` as the client.
 */
function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string; from?: string } = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: options.method ?? 'GET',
        headers: options.headers ?? {},
        localAddress: options.from ?? '127.0.0.1',
        agent: false,
      },
      (res) => {
        let body = ''
        res.setEncoding('utf8')
        res.on('data', (chunk) => {
          body += chunk
        })
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
      },
    )
    req.on('error', reject)
    req.end(options.body)
  })
}

const front = (path: string) => `${cluster.frontUrl}${path}`
const direct = (i: number, path: string) => `${cluster.instances[i]?.url}${path}`

describe('rate limits behind nginx (TRUST_PROXY_HOPS=1, shared Redis)', () => {
  it('counts one client once across instances, whatever X-Forwarded-For it sends', async () => {
    // Directly to each instance: no X-Forwarded-For, so the client is the socket, 127.0.0.1.
    const statuses = [
      (await send(direct(0, '/stats'))).status,
      (await send(direct(1, '/stats'))).status,
      (await send(direct(0, '/llms.txt'))).status,
      (await send(direct(1, '/llms.txt'))).status,
    ]
    expect(statuses).toEqual([200, 200, 200, 200])
    // Through nginx, 127.0.0.1 again: its own X-Forwarded-For entries are left of nginx's.
    const spoofed = (xff: string) =>
      send(front('/openapi.json'), { headers: { 'X-Forwarded-For': xff } })
    expect((await spoofed('203.0.113.1')).status).toBe(200)
    expect((await spoofed('203.0.113.2, 198.51.100.2')).status).toBe(200)
    const refused = await spoofed('203.0.113.3')
    expect(refused.status).toBe(429)
    expect(JSON.parse(refused.body)).toMatchObject({ ok: false, code: 'rate_limited' })
    expect(refused.headers['ratelimit-policy']).toBe(`"free";q=${POINTS};w=60`)
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0)
    expect(refused.headers.ratelimit).toBe(`"free";r=0;t=${refused.headers['retry-after']}`)
    // Every instance refuses it now: the count is in Redis.
    expect((await send(direct(0, '/stats'))).status).toBe(429)
    expect((await send(direct(1, '/stats'))).status).toBe(429)
  })

  it('counts another client apart, and never limits /health', async () => {
    expect((await send(front('/stats'), { from: '127.0.0.2' })).status).toBe(200)
    for (let i = 0; i < 3; i++) {
      expect((await send(front('/health'))).status).toBe(200)
      expect((await send(direct(i % 2, '/health'))).status).toBe(200)
    }
  })

  it('gives a paying client its points back on every instance: a client that pays is never locked out, one over the limit is refused before its payment is read', async () => {
    const from = '127.0.0.3'
    const unpaid = await send(front('/hash'), {
      method: 'POST',
      from,
      headers: { 'Content-Type': 'application/json' },
      body: '{"input":"abc"}',
    })
    expect(unpaid.status).toBe(402)
    const required = decodePaymentRequiredHeader(String(unpaid.headers['payment-required']))
    const accepted = required.accepts[0] as (typeof required.accepts)[number]
    const pay = (nonce: string) =>
      send(front('/hash'), {
        method: 'POST',
        from,
        headers: {
          'Content-Type': 'application/json',
          'PAYMENT-SIGNATURE': encodePaymentSignatureHeader({
            x402Version: 2,
            resource: required.resource,
            accepted,
            payload: fakePayload(accepted, nonce),
          }),
        },
        body: '{"input":"abc"}',
      })
    // One point left of POINTS, then two paid calls: each takes its point and gives it back with
    // two more, in the Redis every instance counts in.
    for (let i = 0; i < POINTS - 2; i++) await send(front('/stats'), { from })
    for (const nonce of ['p1', 'p2']) {
      const paid = await pay(nonce)
      expect(paid.status, paid.body).toBe(200)
      expect(paid.headers['payment-response']).toBeTruthy()
      // The reward is a Redis write after the answer: let it land before the next count.
      await new Promise((resolve) => setTimeout(resolve, 200))
    }
    const free: number[] = []
    for (let i = 0; i < 6; i++) free.push((await send(front('/stats'), { from })).status)
    expect(free).toEqual([200, 200, 200, 200, 200, 429])
    const refused = await pay('p3')
    expect(refused.status).toBe(429)
    expect(JSON.parse(refused.body)).toMatchObject({ code: 'rate_limited' })
  })
})
