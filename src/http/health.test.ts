import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { FAKE_SOLANA, fakeGate, fakeRails } from '../../test/helpers/fakes.js'
import { createFacilitatorLink } from '../payment/facilitator.js'
import { checkHealth, healthSchema, registerHealth } from './health.js'

const BOTH = [
  { id: 'evm', network: 'eip155:8453', live: true },
  { id: 'solana', network: FAKE_SOLANA, live: true },
]

function appWith(options: Parameters<typeof registerHealth>[1]) {
  const app = new Hono()
  registerHealth(app, options)
  return app
}

describe('GET /health', () => {
  it('is ok when the facilitator settles every rail and telemetry is ok', async () => {
    const { link } = fakeGate()
    await link.ready()
    const app = appWith({
      link,
      telemetryHealth: () => ({ status: 'ok', backend: 'sqlite', buffered: 0 }) as const,
    })
    const res = await app.request('/health')
    expect(res.status).toBe(200)
    expect(res.headers.get('Cache-Control')).toBe('no-store')
    const body = healthSchema.parse(await res.json())
    expect(body).toMatchObject({
      status: 'ok',
      reasons: [],
      checks: {
        facilitator: { status: 'ok' },
        rails: { status: 'ok', networks: BOTH },
        telemetry: { status: 'ok', backend: 'sqlite', buffered: 0 },
      },
    })
    expect(Date.parse(body.checks.facilitator.last_ok_at ?? '')).toBeGreaterThan(
      Date.now() - 60_000,
    )
  })

  it('answers HEAD with the status and headers but no body', async () => {
    const { link } = fakeGate()
    await link.ready()
    const res = await appWith({ link }).request('/health', { method: 'HEAD' })
    expect(res.status).toBe(200)
    expect(res.headers.get('Content-Type')).toBe('application/json')
    expect(await res.text()).toBe('')
  })

  it('is degraded, still 200, when no facilitator is configured', async () => {
    const link = createFacilitatorLink({ url: undefined, timeoutMs: 100, rails: fakeRails })
    const res = await appWith({ link }).request('/health')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({
      status: 'degraded',
      reasons: [
        'no payment facilitator is configured: paid calls answer 503',
        'rail eip155:8453 is not live',
        `rail ${FAKE_SOLANA} is not live`,
      ],
      checks: {
        facilitator: { status: 'unconfigured' },
        rails: { status: 'degraded', networks: BOTH.map((r) => ({ ...r, live: false })) },
        telemetry: { status: 'not_configured' },
        redis: { status: 'not_configured' },
      },
    })
  })

  it('reports the shared Redis: ok with the time it connected, or unavailable with the reason', async () => {
    const { link } = fakeGate()
    await link.ready()
    const up = checkHealth({
      link,
      redisHealth: () => ({ status: 'ready', lastReadyAt: Date.UTC(2026, 10, 24, 1, 2, 3) }),
    })
    expect(up.status).toBe('ok')
    expect(up.checks.redis).toEqual({ status: 'ok', last_ok_at: '2026-11-24T01:02:03.000Z' })
    const down = checkHealth({
      link,
      redisHealth: () => ({
        status: 'down',
        lastReadyAt: Date.UTC(2026, 10, 24, 1, 2, 3),
        lastError: 'ECONNREFUSED',
      }),
    })
    expect(down.status).toBe('degraded')
    expect(down.reasons).toEqual([
      'the shared Redis is unreachable: paid calls answer 503 guard_unavailable',
    ])
    expect(down.checks.redis).toEqual({
      status: 'unavailable',
      last_ok_at: '2026-11-24T01:02:03.000Z',
      reason: 'ECONNREFUSED',
    })
  })

  it('names the rail the facilitator does not support', async () => {
    const { link } = fakeGate({}, ['eip155:8453'])
    await link.ready()
    const health = checkHealth({ link })
    expect(health.status).toBe('degraded')
    expect(health.reasons).toEqual([`rail ${FAKE_SOLANA} is not live`])
    expect(health.checks.facilitator.status).toBe('ok')
  })

  it('reports an unreachable facilitator without its error text, and retries it', async () => {
    let up = false
    const { link, calls } = fakeGate({
      supported: async () => {
        if (!up) throw new Error('connect ECONNREFUSED 10.1.2.3:4021')
        return {
          kinds: [{ x402Version: 2, scheme: 'exact', network: 'eip155:8453' }],
          extensions: [],
          signers: {},
        }
      },
    })
    const app = appWith({ link })
    const first = await app.request('/health')
    const text = await first.text()
    expect(JSON.parse(text).reasons[0]).toBe(
      'the payment facilitator is unreachable or failing: paid calls answer 503',
    )
    expect(text).not.toContain('10.1.2.3')
    await new Promise((r) => setTimeout(r, 10))
    expect(calls.supported).toBe(1)
    up = true
    await new Promise((r) => setTimeout(r, 2_100))
    await app.request('/health')
    await new Promise((r) => setTimeout(r, 10))
    const healed = checkHealth({ link })
    expect(healed.checks.facilitator.status).toBe('ok')
    expect(calls.supported).toBe(2)
  })

  it('is degraded when telemetry is degraded', async () => {
    const { link } = fakeGate()
    await link.ready()
    const health = checkHealth({ link, telemetryHealth: () => ({ status: 'degraded' }) })
    expect(health).toMatchObject({ status: 'degraded', reasons: ['telemetry storage is degraded'] })
  })
})
