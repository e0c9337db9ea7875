import { FacilitatorTimeoutError } from '@x402/core/types'
import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { FAKE_FEE_PAYER, FAKE_SOLANA, fakeGate, fakeRails } from '../../test/helpers/fakes.js'
import { healthSchema } from '../descriptions/discovery/health-schema.js'
import { createFacilitatorLink } from '../facilitators/link.js'
import { createFacilitatorRouter } from '../facilitators/router.js'
import { checkHealth, registerHealth } from './health.js'

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
  it('says first, and only there, that the payment networks are simulated on a local devnet', async () => {
    const { link } = fakeGate()
    await link.ready()
    const local = healthSchema.parse(
      await (await appWith({ link, devnet: true }).request('/health')).json(),
    )
    expect(Object.keys(local)[1]).toBe('devnet')
    expect(local.devnet).toBe(
      'The payment networks are simulated on a local devnet, for trying the service: its USDC has no value, no real money moves.',
    )
    const production = healthSchema.parse(await (await appWith({ link }).request('/health')).json())
    expect(production).not.toHaveProperty('devnet')
  })

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
        facilitator: { status: 'unconfigured', facilitators: [] },
        rails: { status: 'degraded', networks: BOTH.map((r) => ({ ...r, live: false })) },
        telemetry: { status: 'not_configured' },
        redis: { status: 'not_configured' },
        channels: { status: 'not_configured' },
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

  describe('with several facilitators', () => {
    const kinds = [
      { x402Version: 2, scheme: 'exact', network: 'eip155:8453' as const },
      {
        x402Version: 2,
        scheme: 'exact',
        network: FAKE_SOLANA as `${string}:${string}`,
        extra: { feePayer: FAKE_FEE_PAYER },
      },
    ]
    function facilitator(fail: { supported?: Error; verify?: Error } = {}) {
      return {
        getSupported: async () => {
          if (fail.supported) throw fail.supported
          return { kinds, extensions: [], signers: {} }
        },
        verify: async () => {
          if (fail.verify) throw fail.verify
          return { isValid: true }
        },
        settle: async () => ({
          success: true,
          transaction: '0x1',
          network: 'eip155:8453' as const,
        }),
      }
    }

    it('names each facilitator by host and auth mode, and why it is not ok', async () => {
      const refused = new TypeError('fetch failed', {
        cause: Object.assign(new Error('connect ECONNREFUSED 10.0.0.7:443'), {
          code: 'ECONNREFUSED',
        }),
      })
      const router = createFacilitatorRouter({
        timeoutMs: 1000,
        facilitators: [
          {
            host: 'api.cdp.coinbase.com',
            auth: 'cdp',
            client: facilitator({
              supported: new Error(
                'Facilitator getSupported failed (401): {"errorType":"unauthorized"}',
              ),
            }),
          },
          { host: '10.0.0.7:443', auth: 'none', client: facilitator({ supported: refused }) },
          {
            host: 'facilitator.payai.network',
            auth: 'payai',
            client: facilitator({ verify: new FacilitatorTimeoutError('verify', 1000) }),
          },
          { host: 'backup.example', auth: 'none', client: facilitator() },
        ],
      })
      const link = createFacilitatorLink({ client: router, rails: fakeRails })
      const state = await link.ready()
      // One verify: the third facilitator times out, the fourth verifies.
      await state.server.verifyPayment(
        { x402Version: 2, accepted: (await state.accepts('1000'))[0], payload: {} } as never,
        (await state.accepts('1000'))[0] as never,
      )
      link.observe()
      const res = await appWith({ link }).request('/health')
      const text = await res.text()
      const body = healthSchema.parse(JSON.parse(text))
      expect(body.status).toBe('degraded')
      expect(body.reasons).toEqual([
        'facilitator api.cdp.coinbase.com (auth cdp) refused our credentials (HTTP 401): check CDP_API_KEY_ID and CDP_API_KEY_SECRET',
        'facilitator 10.0.0.7:443 (auth none) is down (ECONNREFUSED): its rails go to the next facilitator that offers them; 1 of its 1 calls in the last 5 min failed (0 timed out)',
        'facilitator facilitator.payai.network (auth payai) is down (timeout): its rails go to the next facilitator that offers them; 1 of its 2 calls in the last 5 min failed (1 timed out)',
      ])
      expect(body.checks.facilitator.status).toBe('degraded')
      expect(
        body.checks.facilitator.facilitators.map((f) => [f.host, f.auth, f.status, f.reason]),
      ).toEqual([
        ['api.cdp.coinbase.com', 'cdp', 'unauthorized', 'HTTP 401'],
        ['10.0.0.7:443', 'none', 'down', 'ECONNREFUSED'],
        ['facilitator.payai.network', 'payai', 'down', 'timeout'],
        ['backup.example', 'none', 'ok', undefined],
      ])
      expect(body.checks.facilitator.facilitators[2]?.recent).toEqual({
        window_s: 300,
        calls: 2,
        failures: 1,
        timeouts: 1,
      })
      // The rails go to the first facilitator that is up and offers them.
      expect(body.checks.rails.networks).toEqual([
        { id: 'evm', network: 'eip155:8453', live: true, facilitator: 'backup.example' },
        { id: 'solana', network: FAKE_SOLANA, live: true, facilitator: 'backup.example' },
      ])
      expect(text).not.toContain('connect ECONNREFUSED')
      expect(text).not.toContain('unauthorized"}')
    })

    it('names a configured rail that no facilitator offers', async () => {
      const router = createFacilitatorRouter({
        timeoutMs: 1000,
        facilitators: [
          {
            host: 'evm-only.example',
            auth: 'none',
            client: {
              ...facilitator(),
              getSupported: async () => ({ kinds: [kinds[0]], extensions: [], signers: {} }),
            } as never,
          },
        ],
      })
      const link = createFacilitatorLink({ client: router, rails: fakeRails })
      await link.ready()
      expect(checkHealth({ link }).reasons).toEqual([
        `rail ${FAKE_SOLANA} is not live: no facilitator offers it`,
      ])
    })

    it('shows a facilitator whose recent calls failed as degraded, though its last call worked', async () => {
      let fail = true
      const router = createFacilitatorRouter({
        timeoutMs: 1000,
        facilitators: [
          {
            host: 'a.example',
            auth: 'none',
            client: {
              ...facilitator(),
              verify: async () => {
                if (fail) throw new Error('Facilitator verify failed (502): bad gateway')
                return { isValid: true }
              },
            },
          },
        ],
      })
      const link = createFacilitatorLink({ client: router, rails: fakeRails })
      const state = await link.ready()
      const requirements = (await state.accepts('1000'))[0] as never
      const payload = { x402Version: 2, accepted: requirements, payload: {} } as never
      await expect(state.server.verifyPayment(payload, requirements)).rejects.toThrow('(502)')
      fail = false
      await state.server.verifyPayment(payload, requirements)
      link.observe()
      const health = checkHealth({ link })
      expect(health.reasons).toEqual([
        'facilitator a.example (auth none) is failing: 1 of its 3 calls in the last 5 min failed (0 timed out)',
      ])
      expect(health.checks.facilitator.facilitators[0]).toMatchObject({
        status: 'degraded',
        reason: 'HTTP 502',
        recent: { calls: 3, failures: 1, timeouts: 0 },
      })
    })
  })
})
