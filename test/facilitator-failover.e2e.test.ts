import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevFacilitator, type DevStack, startDevStack } from '../src/devnet/stack.js'
import { paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type RunningService, startService } from './helpers/service.js'

// Two facilitators in order (A, then B), each with its own Solana fee payer, on one dev stack.
// Failover when A is down (stopped: connection refused) on both rails, one transfer per call;
// a settle that times out on A is never sent to B.

// Generous: a settle on the devnet takes milliseconds, but the machine may be busy, and a slow
// verify would fail over on its own.
const TIMEOUT_MS = 5_000
let stack: DevStack
let a: DevFacilitator
let b: DevFacilitator
let svc: RunningService

beforeAll(async () => {
  stack = await startDevStack({ payers: 3, facilitators: [{}, {}] })
  ;[a, b] = stack.facilitators as [DevFacilitator, DevFacilitator]
  svc = await startService(stack, {
    FACILITATOR_TIMEOUT_MS: String(TIMEOUT_MS),
    FACILITATOR_SETTLE_TIMEOUT_MS: String(TIMEOUT_MS),
  })
})
afterAll(async () => {
  await svc?.stop()
  await stack?.stop()
})

const host = (f: DevFacilitator) => new URL(f.url).host
const snapshot = () => ({ a: { ...a.requests }, b: { ...b.requests } })
const health = async () => json(await fetch(`${svc.baseUrl}/health`))

/** One paid call to /hash with the official client; its status and the payTo increase. */
async function paidCall(rail: Rail, payer: number, input: string) {
  const before = await payToBalance(stack, rail)
  const pay = await paidFetch(payerKeys(stack, rail, payer), rail)
  const res = await pay(`${svc.baseUrl}/hash`, {
    method: 'POST',
    body: JSON.stringify({ input }),
  })
  return { res, before }
}

/** The fee payer the service's 402 names on the Solana rail right now. */
async function offeredFeePayer(): Promise<unknown> {
  const res = await fetch(`${svc.baseUrl}/hash`, { method: 'POST', body: '{}' })
  const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
  return required.accepts.find((r) => r.network === stack.solana.network)?.extra?.feePayer
}

/** Polls until `check` holds (the service re-reads a facilitator in the background). */
async function until(check: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 30_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
}

describe('two facilitators in order', () => {
  it('serves both rails through the first while it is up', async () => {
    expect(a.feePayer).not.toBe(b.feePayer)
    expect(await offeredFeePayer()).toBe(a.feePayer)
    const start = snapshot()
    for (const rail of ['evm', 'solana'] as const) {
      const { res, before } = await paidCall(rail, 0, `up-${rail}`)
      expect(res.status).toBe(200)
      expect((await payToBalance(stack, rail)) - before).toBe(1000n)
    }
    const end = snapshot()
    expect(end.a.verify - start.a.verify).toBe(2)
    expect(end.a.settle - start.a.settle).toBe(2)
    expect(end.b).toEqual(start.b)
  })

  it('never sends a settle that timed out on the first to the second: 503, one transfer at most', async () => {
    const start = snapshot()
    const settledOnA = a.received.filter((r) => r.op === 'settle').length
    a.faults.settleDelayMs = TIMEOUT_MS + 2_000
    try {
      const { res, before } = await paidCall('evm', 1, 'slow-settle')
      // The settle may have landed: 503 settlement_unknown, never facilitator_unavailable.
      expect(res.status).toBe(503)
      expect((await json(res)).code).toBe('settlement_unknown')
      expect(b.requests).toEqual(start.b)
      expect(a.requests.settle - start.a.settle).toBe(1)
      // A finishes the settle it was sent after the service gave up: that is the one transfer.
      await until(
        async () => a.received.filter((r) => r.op === 'settle').length > settledOnA,
        'the late settle on A',
      )
      expect((await payToBalance(stack, 'evm')) - before).toBe(1000n)
    } finally {
      a.faults.settleDelayMs = 0
    }
    const report = (await health()).checks.facilitator.facilitators[0]
    expect(report).toMatchObject({ host: host(a), reason: 'timeout' })
    expect(report.recent.timeouts).toBe(1)
    expect(b.requests).toEqual(start.b)
  })

  it('fails over to the second when the first refuses connections, one transfer per call, on both rails', async () => {
    // A comes back as first choice once it answers /supported again.
    await until(async () => (await offeredFeePayer()) === a.feePayer, 'A serving again')
    // A Solana payment signed for A's fee payer while A is up: only A can co-sign it.
    const unpaid = await fetch(`${svc.baseUrl}/hash`, {
      method: 'POST',
      body: '{"input":"signed-for-a"}',
    })
    const client = new x402HTTPClient(await payerClient(payerKeys(stack, 'solana', 2), 'solana'))
    const required = client.getPaymentRequiredResponse((n) => unpaid.headers.get(n))
    const signedForA = client.encodePaymentSignatureHeader(
      await client.createPaymentPayload(required),
    )

    await a.stop()
    const start = snapshot()
    const balances = {
      evm: await payToBalance(stack, 'evm'),
      solana: await payToBalance(stack, 'solana'),
    }

    // 1. The payment A's fee payer must co-sign: no other facilitator can settle it. 503,
    //    nothing charged, and the router now knows A is down.
    const stranded = await fetch(`${svc.baseUrl}/hash`, {
      method: 'POST',
      headers: signedForA,
      body: '{"input":"signed-for-a"}',
    })
    expect(stranded.status).toBe(503)
    expect((await json(stranded)).code).toBe('facilitator_unavailable')

    // 2. Base: verified and settled through B.
    const evm = await paidCall('evm', 2, 'failover-evm')
    expect(evm.res.status).toBe(200)
    // 3. Solana: the next 402 names B's fee payer, and B settles it.
    expect(await offeredFeePayer()).toBe(b.feePayer)
    const sol = await paidCall('solana', 2, 'failover-solana')
    expect(sol.res.status).toBe(200)

    expect((await payToBalance(stack, 'evm')) - balances.evm).toBe(1000n)
    expect((await payToBalance(stack, 'solana')) - balances.solana).toBe(1000n)
    const end = snapshot()
    expect(end.a).toEqual(start.a)
    expect(end.b.verify - start.b.verify).toBe(2)
    expect(end.b.settle - start.b.settle).toBe(2)

    const h = await health()
    expect(h.status).toBe('degraded')
    expect(h.checks.facilitator.status).toBe('degraded')
    expect(
      h.checks.facilitator.facilitators.map((f: { host: string; status: string }) => [
        f.host,
        f.status,
      ]),
    ).toEqual([
      [host(a), 'down'],
      [host(b), 'ok'],
    ])
    expect(h.checks.rails.networks.map((n: { facilitator: string }) => n.facilitator)).toEqual([
      host(b),
      host(b),
    ])
    expect(h.reasons[0]).toMatch(
      new RegExp(
        `^facilitator ${host(a)} \\(auth none\\) is down \\(ECONNREFUSED\\): its rails go to the next facilitator that offers them`,
      ),
    )
  })
})
