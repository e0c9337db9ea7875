import { decodePaymentRequiredHeader } from '@x402/core/http'
import { extractDiscoveryInfo } from '@x402/extensions/bazaar'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { loadConfig } from '../src/config.js'
import { createCdpApiKey, type DevApiKey } from '../src/devnet/api-keys.js'
import { type DevFacilitator, type DevStack, startDevStack } from '../src/devnet/stack.js'
import { logger } from '../src/logger.js'
import { createService } from '../src/service.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance } from './helpers/rails.js'
import { type RunningService, startService } from './helpers/service.js'

// The service pays through facilitators that check CDP's JWT as CDP does (signature, kid, sub,
// iss, expiry, and uris bound to method, host and path), on both rails, with keys of both kinds
// CDP issues; a wrong key is named at start and in /health; the bazaar info reaches the
// facilitator on settle. One dev stack: facilitator A (EC key, under CDP's base path) and B
// (Ed25519 key).

const ec = createCdpApiKey('ec')
const ed = createCdpApiKey('ed25519')
let stack: DevStack
let a: DevFacilitator
let b: DevFacilitator
const services: RunningService[] = []

beforeAll(async () => {
  stack = await startDevStack({
    payers: 2,
    facilitators: [
      {
        auth: { mode: 'cdp', keyId: ec.id, publicKey: ec.publicKey },
        basePath: '/platform/v2/x402',
      },
      { auth: { mode: 'cdp', keyId: ed.id, publicKey: ed.publicKey } },
    ],
  })
  ;[a, b] = stack.facilitators as [DevFacilitator, DevFacilitator]
})
afterAll(async () => {
  for (const s of services) await s.stop()
  await stack?.stop()
})

/** The service on one facilitator with this auth and key. */
async function serviceOn(f: DevFacilitator, auth: string, key?: DevApiKey) {
  const svc = await startService(stack, {
    FACILITATOR_URL: f.url,
    FACILITATOR_AUTH: auth,
    ...(key ? { CDP_API_KEY_ID: key.id, CDP_API_KEY_SECRET: key.secret } : {}),
  })
  services.push(svc)
  return svc
}

const host = (f: DevFacilitator) => new URL(f.url).host
const counts = (f: DevFacilitator) => ({ ...f.requests })

describe.each([
  ['EC P-256 (SEC1 PEM)', () => a, ec],
  ['Ed25519 (base64)', () => b, ed],
] as const)('a CDP-authenticated facilitator, %s key', (_kind, facilitator, key) => {
  let svc: RunningService
  beforeAll(async () => {
    svc = await serviceOn(facilitator(), 'cdp', key)
  })

  it.each(['evm', 'solana'] as const)('settles a paid call on %s, one transfer', async (rail) => {
    const f = facilitator()
    const before = { balance: await payToBalance(stack, rail), requests: counts(f) }
    const pay = await paidFetch(payerKeys(stack, rail, f === a ? 0 : 1), rail)
    const res = await pay(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"cdp"}' })
    expect(res.status).toBe(200)
    expect((await json(res)).ok).toBe(true)
    expect((await payToBalance(stack, rail)) - before.balance).toBe(1000n)
    expect(counts(f).verify - before.requests.verify).toBe(1)
    expect(counts(f).settle - before.requests.settle).toBe(1)
    // Every request it received passed its JWT check.
    expect(f.received.map((r) => r.status)).not.toContain(401)
    const health = await json(await fetch(`${svc.baseUrl}/health`))
    expect(health.checks.facilitator.facilitators).toEqual([
      expect.objectContaining({ host: host(f), auth: 'cdp', status: 'ok' }),
    ])
  })
})

describe('the bazaar extension', () => {
  it('reaches the facilitator in the settled PaymentPayload, as a facilitator catalogues it', async () => {
    const svc = services[0] as RunningService
    const unpaid = await fetch(`${svc.baseUrl}/hash`, { method: 'POST', body: '{}' })
    const offered = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED') ?? '')
    const pay = await paidFetch(payerKeys(stack, 'evm', 0), 'evm')
    const res = await pay(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"bazaar"}' })
    expect(res.status).toBe(200)
    const settled = a.received.filter((r) => r.op === 'settle').at(-1)
    expect(settled?.payment.extensions?.bazaar).toEqual(offered.extensions?.bazaar)
    // The SDK's own extraction and schema validation, as CDP's indexer reads a settle.
    const found = extractDiscoveryInfo(
      { ...settled?.payment, payload: {} } as never,
      settled?.requirements as never,
    )
    expect(found).toMatchObject({
      resourceUrl: `${svc.baseUrl}/hash`,
      method: 'POST',
      x402Version: 2,
      discoveryInfo: { input: { type: 'http', method: 'POST', bodyType: 'json' } },
    })
  })
})

describe('what is wrong, said at start and in /health', () => {
  it('names the facilitator and its auth mode when it refuses our key (401), logging no credential', async () => {
    const spies = [
      ...(['info', 'warn', 'error', 'debug'] as const).map((level) => vi.spyOn(logger, level)),
      vi.spyOn(console, 'warn'),
      vi.spyOn(console, 'log'),
    ]
    const wrong = { ...createCdpApiKey('ec'), id: ec.id }
    const svc = await serviceOn(a, 'cdp', wrong)
    const before = counts(a)
    const res = await fetch(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"x"}' })
    expect(res.status).toBe(503)
    expect((await json(res)).code).toBe('facilitator_unavailable')
    const health = await json(await fetch(`${svc.baseUrl}/health`))
    expect(health.status).toBe('degraded')
    expect(health.reasons).toEqual([
      'the payment facilitator is unreachable or failing: paid calls answer 503',
      `facilitator ${host(a)} (auth cdp) refused our credentials (HTTP 401): check CDP_API_KEY_ID and CDP_API_KEY_SECRET`,
      'rail eip155:8453 is not live',
      `rail ${stack.solana.network} is not live`,
    ])
    expect(health.checks.facilitator.facilitators).toEqual([
      {
        host: host(a),
        auth: 'cdp',
        status: 'unauthorized',
        networks: [],
        reason: 'HTTP 401',
        recent: { window_s: 300, calls: 1, failures: 1, timeouts: 0 },
      },
    ])
    expect(counts(a)).toEqual({ ...before, supported: before.supported + 1 })
    expect(JSON.stringify(health)).not.toContain(wrong.secret.slice(40, 60))
    // The start-up log says it too; no log line holds the key or a JWT.
    const logged = spies.flatMap((spy) => spy.mock.calls.map((args) => JSON.stringify(args)))
    for (const spy of spies) spy.mockRestore()
    expect(logged).toContain(
      JSON.stringify([
        { facilitator: host(a), auth: 'cdp', op: 'supported', reason: 'HTTP 401' },
        `facilitator ${host(a)} (auth cdp) refused our credentials: check CDP_API_KEY_ID and CDP_API_KEY_SECRET`,
      ]),
    )
    for (const line of logged) {
      expect(line).not.toContain(wrong.secret.split('\n')[1]?.slice(0, 40))
      expect(line).not.toMatch(/Bearer|eyJ[A-Za-z0-9_-]{10}/)
    }
  })

  it('says a facilitator wants credentials when none are configured for it', async () => {
    const svc = await serviceOn(b, 'none')
    await fetch(`${svc.baseUrl}/hash`, { method: 'POST', body: '{}' })
    const health = await json(await fetch(`${svc.baseUrl}/health`))
    expect(health.reasons).toContain(
      `facilitator ${host(b)} (auth none) refused our credentials (HTTP 401): it wants credentials, set its FACILITATOR_AUTH`,
    )
  })

  it('refuses to start with cdp and no keys, or a key that is not a CDP key', () => {
    const env = { ...stack.serviceEnv, FACILITATOR_URL: a.url, FACILITATOR_AUTH: 'cdp' }
    expect(() => loadConfig(env)).toThrow(
      `CDP_API_KEY_ID, CDP_API_KEY_SECRET: required by FACILITATOR_AUTH cdp (for ${host(a)}); without them every request to it would go unauthenticated`,
    )
    const config = loadConfig({ ...env, CDP_API_KEY_ID: ec.id, CDP_API_KEY_SECRET: 'c2VjcmV0' })
    expect(() => createService(config)).toThrow(
      'CDP_API_KEY_SECRET is neither an EC private key in PEM nor a base64 Ed25519 key (64 bytes: seed, then public key)',
    )
  })
})
