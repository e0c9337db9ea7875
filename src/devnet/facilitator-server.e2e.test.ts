import { get } from 'node:http'
import { x402Facilitator } from '@x402/core/facilitator'
import { HTTPFacilitatorClient } from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import {
  createFacilitatorApp,
  type FacilitatorReceived,
  startFacilitatorServer,
} from './facilitator-server.js'

// A facilitator with no scheme registered: every verify/settle throws inside the SDK, which is
// what the 500 path needs; the 200 paths run against a real chain in evm.e2e.test.ts.
const facilitator = new x402Facilitator()

const requirements: PaymentRequirements = {
  scheme: 'exact',
  network: 'eip155:1',
  amount: '1000',
  asset: '0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48',
  payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  maxTimeoutSeconds: 60,
  extra: { name: 'USD Coin', version: '2' },
}
const payload: PaymentPayload = {
  x402Version: 2,
  accepted: requirements,
  payload: { signature: '0x00', authorization: {} },
}

function post(path: string, body: string) {
  return createFacilitatorApp(facilitator).request(path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  })
}

describe('facilitator HTTP API', () => {
  it('GET /supported returns the facilitator’s SupportedResponse', async () => {
    const res = await createFacilitatorApp(facilitator).request('/supported')
    expect(res.status).toBe(200)
    expect(await res.json()).toEqual({ kinds: [], extensions: [], signers: {} })
  })

  it.each(['/verify', '/settle'])('POST %s answers 400 to a malformed body', async (path) => {
    const cases: [string, string][] = [
      ['not json', 'body must be a JSON object'],
      ['[]', 'paymentPayload is not a valid PaymentPayload'],
      ['{}', 'paymentPayload is not a valid PaymentPayload'],
      [
        JSON.stringify({ x402Version: 2, paymentPayload: payload, paymentRequirements: {} }),
        'paymentRequirements is not a valid PaymentRequirements',
      ],
      [
        JSON.stringify({
          x402Version: 2,
          paymentPayload: { ...payload, accepted: undefined },
          paymentRequirements: requirements,
        }),
        'paymentPayload is not a valid PaymentPayload',
      ],
      [
        JSON.stringify({
          x402Version: 1,
          paymentPayload: payload,
          paymentRequirements: requirements,
        }),
        'x402Version must equal paymentPayload.x402Version',
      ],
    ]
    for (const [body, error] of cases) {
      const res = await post(path, body)
      expect({ body, status: res.status, json: await res.json() }).toEqual({
        body,
        status: 400,
        json: { error },
      })
    }
  })

  it.each(['/verify', '/settle'])(
    'POST %s answers 500 when the facilitator throws',
    async (path) => {
      const res = await post(
        path,
        JSON.stringify({
          x402Version: 2,
          paymentPayload: payload,
          paymentRequirements: requirements,
        }),
      )
      expect(res.status).toBe(500)
      expect(await res.json()).toEqual({ error: 'No facilitator registered for x402 version: 2' })
    },
  )
})

describe('facilitator request counts', () => {
  it('counts every request by endpoint, malformed ones included', async () => {
    const counts = { supported: 0, verify: 0, settle: 0 }
    const app = createFacilitatorApp(facilitator, { counts })
    await app.request('/supported')
    await app.request('/verify', { method: 'POST', body: 'not json' })
    await app.request('/settle', { method: 'POST', body: '{}' })
    await app.request('/settle', { method: 'POST', body: '{}' })
    await app.request('/other')
    expect(counts).toEqual({ supported: 1, verify: 1, settle: 2 })
  })
})

describe('startFacilitatorServer', () => {
  it('serves the official HTTPFacilitatorClient and refuses connections after stop()', async () => {
    const server = await startFacilitatorServer(facilitator)
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
    const client = new HTTPFacilitatorClient({ url: server.url })
    expect(await client.getSupported()).toEqual({ kinds: [], extensions: [], signers: {} })
    await expect(client.verify(payload, requirements)).rejects.toThrow(
      'Facilitator verify failed (500): {"error":"No facilitator registered for x402 version: 2"}',
    )

    await server.stop()
    await server.stop()
    // The client's pooled keep-alive socket was closed by stop(): its next call fails one way
    // or another; a fresh connection must be refused outright.
    await expect(client.verify(payload, requirements)).rejects.toThrow('fetch failed')
    const refused = await new Promise<string | undefined>((resolve) => {
      get(`${server.url}/supported`, { agent: false }, () => resolve('answered')).once(
        'error',
        (err: NodeJS.ErrnoException) => resolve(err.code),
      )
    })
    expect(refused).toBe('ECONNREFUSED')
  })
})

describe('faults that change a settle answer after it ran', () => {
  const body = JSON.stringify({
    x402Version: 2,
    paymentPayload: payload,
    paymentRequirements: requirements,
  })

  it('loseNextSettleAnswers: the socket is destroyed unanswered, once, and recorded', async () => {
    const faults = { loseNextSettleAnswers: 1 }
    const received: FacilitatorReceived[] = []
    const server = await startFacilitatorServer(facilitator, { faults, received })
    try {
      const client = new HTTPFacilitatorClient({ url: server.url })
      const lost = await client.settle(payload, requirements).catch((e: unknown) => e as Error)
      expect(lost).toBeInstanceOf(Error)
      expect((lost as Error & { cause?: { code?: string } }).cause?.code).toBe('UND_ERR_SOCKET')
      expect(faults.loseNextSettleAnswers).toBe(0)
      // The next settle is answered again (here the SDK's 500: no scheme is registered).
      await expect(client.settle(payload, requirements)).rejects.toThrow(/\(500\)/)
      expect(received.map((r) => [r.op, r.status, r.answer])).toEqual([
        ['settle', 500, 'lost'],
        ['settle', 500, undefined],
      ])
      // The same signed payload, known by its digest only.
      expect(received[0]?.payloadSha256).toMatch(/^[0-9a-f]{64}$/)
      expect(received[1]?.payloadSha256).toBe(received[0]?.payloadSha256)
      expect(JSON.stringify(received)).not.toContain('"signature"')
    } finally {
      await server.stop()
    }
  })

  it('loseNextSettleAnswers without a socket (app.request): an empty 502', async () => {
    const faults = { loseNextSettleAnswers: 1 }
    const res = await createFacilitatorApp(facilitator, { faults }).request('/settle', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body,
    })
    expect(res.status).toBe(502)
    expect(await res.text()).toBe('')
    expect(faults.loseNextSettleAnswers).toBe(0)
  })

  it('failNextSettleAnswers: a 500 after the settle ran, and never for a verify', async () => {
    const faults = { failNextSettleAnswers: 1 }
    const received: FacilitatorReceived[] = []
    const app = createFacilitatorApp(facilitator, { faults, received })
    const post = (path: string) =>
      app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
    expect((await post('/verify')).status).toBe(500)
    expect(faults.failNextSettleAnswers).toBe(1)
    const failed = await post('/settle')
    expect(failed.status).toBe(500)
    expect(await failed.json()).toEqual({ error: 'fault injected: settle failed after broadcast' })
    expect(faults.failNextSettleAnswers).toBe(0)
    expect(received.map((r) => [r.op, r.answer])).toEqual([
      ['verify', undefined],
      ['settle', 'failed'],
    ])
  })
})
