import type { FacilitatorClient } from '@x402/core/server'
import {
  FacilitatorTimeoutError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  type SupportedResponse,
  VerifyError,
} from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { neverReached } from './failures.js'
import { createFacilitatorRouter, RETRY_MIN_MS } from './router.js'

// Unit tests of the router with scripted clients: each answers, fails as a real HTTP client does
// (the error shapes are those of failures.test.ts), or hangs.

const BASE = 'eip155:8453'
const SOL = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

const refused = () =>
  new TypeError('fetch failed', { cause: Object.assign(new Error('x'), { code: 'ECONNREFUSED' }) })
const http503 = (op: string) => new Error(`Facilitator ${op} failed (503): {"error":"busy"}`)
const timeout = (op: string) => new FacilitatorTimeoutError(op, 1000)

type Script = {
  networks?: string[]
  supported?: () => Promise<SupportedResponse>
  verify?: () => Promise<unknown>
  settle?: () => Promise<unknown>
}

/** A scripted facilitator: its Solana kind names its own fee payer, `fee-<name>`. */
function scripted(name: string, script: Script = {}) {
  const calls = { supported: 0, verify: 0, settle: 0 }
  const client: FacilitatorClient = {
    async getSupported() {
      calls.supported++
      if (script.supported) return script.supported()
      return {
        kinds: (script.networks ?? [BASE, SOL]).map((network) => ({
          x402Version: 2,
          scheme: 'exact',
          network: network as `${string}:${string}`,
          ...(network.startsWith('solana') ? { extra: { feePayer: `fee-${name}` } } : {}),
        })),
        extensions: [`ext-${name}`],
        signers: { 'eip155:*': [`signer-${name}`] },
      }
    },
    async verify() {
      calls.verify++
      return (script.verify ? script.verify() : { isValid: true, payer: '0xp' }) as never
    },
    async settle(_p, r) {
      calls.settle++
      return (
        script.settle
          ? script.settle()
          : { success: true, transaction: `tx-${name}`, network: r.network }
      ) as never
    },
  }
  return { client, calls, host: `${name}.example`, auth: 'none' as const }
}

function setup(
  facilitators: ReturnType<typeof scripted>[],
  timeoutMs = 1000,
  settleTimeoutMs?: number,
) {
  let t = 1_000_000
  const clock = { advance: (ms: number) => (t += ms) }
  const router = createFacilitatorRouter({
    facilitators,
    timeoutMs,
    ...(settleTimeoutMs ? { settleTimeoutMs } : {}),
    now: () => t,
  })
  return { router, clock }
}

function payment(network = BASE, feePayer?: string) {
  const requirements: PaymentRequirements = {
    scheme: 'exact',
    network: network as `${string}:${string}`,
    amount: '1000',
    asset: 'USDC',
    payTo: 'us',
    maxTimeoutSeconds: 60,
    extra: feePayer ? { feePayer } : {},
  }
  const payload: PaymentPayload = { x402Version: 2, accepted: requirements, payload: {} }
  return { payload, requirements }
}

const states = (router: ReturnType<typeof setup>['router']) =>
  router.reports().map((r) => `${r.host} ${r.state}`)

describe('the facilitator router', () => {
  it('merges /supported: each network from the first facilitator that offers it', async () => {
    const a = scripted('a', { networks: [BASE] })
    const b = scripted('b')
    const { router } = setup([a, b])
    expect(await router.getSupported()).toEqual({
      kinds: [
        { x402Version: 2, scheme: 'exact', network: BASE },
        { x402Version: 2, scheme: 'exact', network: SOL, extra: { feePayer: 'fee-b' } },
      ],
      extensions: ['ext-a', 'ext-b'],
      signers: { 'eip155:*': ['signer-a', 'signer-b'] },
    })
    expect(router.servedBy(BASE)).toBe('a.example')
    expect(router.servedBy(SOL)).toBe('b.example')
    expect(router.reports()).toEqual([
      {
        host: 'a.example',
        auth: 'none',
        state: 'ok',
        networks: [BASE],
        lastOkAt: 1_000_000,
        recent: { windowSeconds: 300, calls: 1, failures: 0, timeouts: 0 },
      },
      {
        host: 'b.example',
        auth: 'none',
        state: 'ok',
        networks: [BASE, SOL],
        lastOkAt: 1_000_000,
        recent: { windowSeconds: 300, calls: 1, failures: 0, timeouts: 0 },
      },
    ])
  })

  it('verifies through the next facilitator when the first is refused, 5xx or times out', async () => {
    for (const failure of [refused(), http503('verify'), timeout('verify')]) {
      const a = scripted('a', { verify: () => Promise.reject(failure) })
      const b = scripted('b')
      const { router } = setup([a, b])
      await router.getSupported()
      const { payload, requirements } = payment()
      expect(await router.verify(payload, requirements)).toEqual({ isValid: true, payer: '0xp' })
      expect([a.calls.verify, b.calls.verify]).toEqual([1, 1])
      expect(states(router)).toEqual(['a.example down', 'b.example ok'])
      // Settle goes to the facilitator that verified it, and the one that failed is skipped.
      expect(await router.settle(payload, requirements)).toMatchObject({ transaction: 'tx-b' })
      expect([a.calls.settle, b.calls.settle]).toEqual([0, 1])
    }
  })

  it('keeps a facilitator in service after a 500 on one payment, asks the next, and shows it degraded', async () => {
    const failure = new Error(
      'Facilitator verify failed (500): {"error":"Cannot convert x to a BigInt"}',
    )
    const a = scripted('a', { verify: () => Promise.reject(failure) })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const r0 = router.revision()
    const { payload, requirements } = payment()
    for (let i = 0; i < 150; i++) {
      expect(await router.verify(payload, requirements)).toEqual({ isValid: true, payer: '0xp' })
    }
    expect([a.calls.verify, b.calls.verify]).toEqual([150, 150])
    expect(states(router)).toEqual(['a.example degraded', 'b.example ok'])
    expect(router.reports()[0]).toMatchObject({ lastError: 'HTTP 500' })
    expect(router.revision()).toBe(r0)
    expect(router.servedBy(SOL)).toBe('a.example')
  })

  it('passes a verdict on the payment through without asking another facilitator', async () => {
    const verdict = new VerifyError(400, { isValid: false, invalidReason: 'insufficient_funds' })
    const a = scripted('a', { verify: () => Promise.reject(verdict) })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const { payload, requirements } = payment()
    await expect(router.verify(payload, requirements)).rejects.toBe(verdict)
    expect(b.calls.verify).toBe(0)
    expect(states(router)).toEqual(['a.example ok', 'b.example ok'])
  })

  it('neither marks down nor asks another facilitator when one refuses the request (4xx)', async () => {
    const refusal = new Error(
      'Facilitator verify failed (400): {"error":"paymentPayload is not valid"}',
    )
    const a = scripted('a', { verify: () => Promise.reject(refusal) })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const r0 = router.revision()
    const { payload, requirements } = payment()
    await expect(router.verify(payload, requirements)).rejects.toBe(refusal)
    expect(b.calls.verify).toBe(0)
    expect(states(router)).toEqual(['a.example ok', 'b.example ok'])
    expect(router.revision()).toBe(r0)
  })

  it('throws the last error when every facilitator fails verify', async () => {
    const a = scripted('a', { verify: () => Promise.reject(refused()) })
    const last = http503('verify')
    const b = scripted('b', { verify: () => Promise.reject(last) })
    const { router } = setup([a, b])
    await router.getSupported()
    const { payload, requirements } = payment()
    await expect(router.verify(payload, requirements)).rejects.toBe(last)
    // Both down: the next call still tries both (a mark may be stale), best first.
    await expect(router.verify(payload, requirements)).rejects.toBe(last)
    expect([a.calls.verify, b.calls.verify]).toEqual([2, 2])
  })

  it('re-sends a settle to the next facilitator only when the first never received it', async () => {
    const a = scripted('a', { settle: () => Promise.reject(refused()) })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const { payload, requirements } = payment()
    expect(await router.settle(payload, requirements)).toMatchObject({ transaction: 'tx-b' })
    expect([a.calls.settle, b.calls.settle]).toEqual([1, 1])
  })

  it.each([
    ['a timeout', timeout('settle')],
    ['a 5xx', http503('settle')],
    ['a 5xx SettleError', new SettleError(502, { success: false, transaction: '', network: BASE })],
    ['a reset connection', new TypeError('fetch failed', { cause: { code: 'ECONNRESET' } })],
  ])('never re-sends a settle after %s: it may have reached the first', async (_, failure) => {
    const a = scripted('a', { settle: () => Promise.reject(failure) })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const { payload, requirements } = payment()
    await expect(router.settle(payload, requirements)).rejects.toBe(failure)
    expect([a.calls.settle, b.calls.settle]).toEqual([1, 0])
    expect(states(router)).toEqual(['a.example down', 'b.example ok'])
  })

  it('sends the SDK’s settlement_pending retry of a payload to the facilitator that had it', async () => {
    let first = true
    const a = scripted('a', {
      settle: async () => {
        if (!first) return { success: true, transaction: 'tx-a', network: BASE }
        first = false
        throw new SettleError(400, {
          success: false,
          errorReason: 'settlement_pending',
          transaction: '0xpending',
          network: BASE,
        })
      },
    })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const { payload, requirements } = payment()
    await expect(router.settle(payload, requirements)).rejects.toBeInstanceOf(SettleError)
    expect(await router.settle(payload, requirements)).toMatchObject({ transaction: 'tx-a' })
    expect([a.calls.settle, b.calls.settle]).toEqual([2, 0])
  })

  it('never re-sends a pinned settle, even when the facilitator then refuses connections', async () => {
    let n = 0
    const a = scripted('a', {
      settle: () => Promise.reject(n++ === 0 ? http503('settle') : refused()),
    })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const { payload, requirements } = payment()
    await expect(router.settle(payload, requirements)).rejects.toThrow('(503)')
    // Refused on the retry, but the first attempt was sent: in doubt, not "never reached".
    const retry = await router.settle(payload, requirements).catch((e: unknown) => e)
    expect(retry).toBeInstanceOf(Error)
    expect((retry as Error).message).toMatch(
      /^Facilitator settle retry not delivered \(.+\); an earlier attempt was sent$/,
    )
    expect(neverReached(retry)).toBe(false)
    expect([a.calls.settle, b.calls.settle]).toEqual([2, 0])
  })

  it('gives a re-sent settle only what is left of the one FACILITATOR_SETTLE_TIMEOUT_MS', async () => {
    const a = scripted('a')
    const b = scripted('b', { settle: () => new Promise(() => {}) })
    const { router, clock } = setup([a, b], 10, 50)
    a.client.settle = async () => {
      a.calls.settle++
      clock.advance(40)
      throw refused()
    }
    await router.getSupported()
    const { payload, requirements } = payment()
    const started = performance.now()
    const error = await router.settle(payload, requirements).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorTimeoutError)
    expect(performance.now() - started).toBeLessThan(5_000)
    expect([a.calls.settle, b.calls.settle]).toEqual([1, 1])
  })

  it('counts the SDK’s settlement_pending retry within the first attempt’s FACILITATOR_SETTLE_TIMEOUT_MS, and sends none when it is spent', async () => {
    const pending = () =>
      new SettleError(400, {
        success: false,
        errorReason: 'settlement_pending',
        transaction: '0xpending',
        network: BASE,
      })
    // The retry is sent with what is left of the one budget, and times out at that.
    let clock: ReturnType<typeof setup>['clock'] | undefined
    const slow = scripted('a', {
      settle: async () => {
        if (slow.calls.settle === 1) {
          clock?.advance(20)
          throw pending()
        }
        return new Promise(() => {})
      },
    })
    const left = setup([slow], 10, 50)
    clock = left.clock
    await left.router.getSupported()
    const one = payment()
    await expect(left.router.settle(one.payload, one.requirements)).rejects.toBeInstanceOf(
      SettleError,
    )
    const error = await left.router.settle(one.payload, one.requirements).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(FacilitatorTimeoutError)
    expect(slow.calls.settle).toBe(2)

    // A first answer after the whole budget: the retry is not sent at all.
    const spent = scripted('a', {
      settle: async () => {
        clock?.advance(60)
        throw pending()
      },
    })
    const none = setup([spent], 10, 50)
    clock = none.clock
    await none.router.getSupported()
    const two = payment()
    await expect(none.router.settle(two.payload, two.requirements)).rejects.toBeInstanceOf(
      SettleError,
    )
    await expect(none.router.settle(two.payload, two.requirements)).rejects.toBeInstanceOf(
      FacilitatorTimeoutError,
    )
    expect(spent.calls.settle).toBe(1)
  })

  it('sends a Solana payment only to the facilitator whose fee payer it names', async () => {
    const a = scripted('a', { verify: () => Promise.reject(refused()) })
    const b = scripted('b')
    const { router } = setup([a, b])
    await router.getSupported()
    const forA = payment(SOL, 'fee-a')
    await expect(router.verify(forA.payload, forA.requirements)).rejects.toThrow('fetch failed')
    expect(b.calls.verify).toBe(0)
    const forB = payment(SOL, 'fee-b')
    expect(await router.verify(forB.payload, forB.requirements)).toMatchObject({ isValid: true })
    const unknown = payment(SOL, 'fee-z')
    await expect(router.verify(unknown.payload, unknown.requirements)).rejects.toThrow(
      `No facilitator offers exact on ${SOL} with this fee payer`,
    )
  })

  it('routes around a down facilitator, changes its revision, and takes it back when it answers', async () => {
    let aUp = true
    const a = scripted('a', {
      verify: async () => {
        if (!aUp) throw refused()
        return { isValid: true }
      },
    })
    const realSupported = a.client.getSupported.bind(a.client)
    a.client.getSupported = async () => {
      if (!aUp) {
        a.calls.supported++
        throw refused()
      }
      return realSupported()
    }
    const b = scripted('b')
    const { router, clock } = setup([a, b])
    await router.getSupported()
    const r0 = router.revision()
    expect(router.servedBy(SOL)).toBe('a.example')

    aUp = false
    const { payload, requirements } = payment()
    await router.verify(payload, requirements)
    expect(router.revision()).not.toBe(r0)
    expect(router.servedBy(SOL)).toBe('b.example')
    // Rebuilding the offers does not wait on the facilitator that is down.
    expect((await router.getSupported()).kinds[1]).toMatchObject({ extra: { feePayer: 'fee-b' } })
    expect(a.calls.supported).toBe(1)
    expect(router.probeDue()).toBe(false)

    clock.advance(RETRY_MIN_MS)
    expect(router.probeDue()).toBe(true)
    await router.getSupported() // the retry runs in the background, and fails
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(a.calls.supported).toBe(2)
    clock.advance(RETRY_MIN_MS)
    expect(router.probeDue()).toBe(false) // backing off: 4 s after the second failure
    clock.advance(RETRY_MIN_MS)
    aUp = true
    const r1 = router.revision()
    await router.getSupported()
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(router.revision()).not.toBe(r1)
    expect(router.servedBy(SOL)).toBe('a.example')
    expect(states(router)).toEqual(['a.example degraded', 'b.example ok'])
    expect(router.reports()[0]).toMatchObject({
      lastError: 'ECONNREFUSED',
      recent: { calls: 4, failures: 2, timeouts: 0 },
    })
  })

  it('reports 401 as unauthorized, and refuses to answer /supported when none serves', async () => {
    const a = scripted('a', {
      supported: () => Promise.reject(new Error('Facilitator getSupported failed (401): {}')),
    })
    const { router } = setup([a])
    await expect(router.getSupported()).rejects.toThrow(
      'No facilitator answered /supported: a.example (auth none) HTTP 401',
    )
    expect(router.reports()[0]).toMatchObject({ state: 'unauthorized', lastError: 'HTTP 401' })
  })
})
