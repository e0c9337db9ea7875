import { createServer, type IncomingHttpHeaders, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { HTTPFacilitatorClient } from '@x402/core/server'
import {
  FacilitatorTimeoutError,
  type PaymentPayload,
  type PaymentRequirements,
} from '@x402/core/types'
import { afterAll, describe, expect, it } from 'vitest'
import type { Endpoint } from './auth.js'
import { createHttpFacilitatorClient, FacilitatorHttpClient } from './client.js'
import { failureKind, neverReached } from './failures.js'
import { IDLE_CONNECTION_MS, MAX_FACILITATOR_ANSWER_BYTES } from './transport.js'

describe('createHttpFacilitatorClient', () => {
  it('makes only the called endpoint’s headers, and sends them', async () => {
    const seen: (string | undefined)[] = []
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization)
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"kinds":[],"extensions":[],"signers":{}}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const made: Endpoint[] = []
      let all = 0
      const client = createHttpFacilitatorClient({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        timeoutMs: 5_000,
        auth: {
          mode: 'cdp',
          headersFor: async (endpoint) => {
            made.push(endpoint)
            return { Authorization: `Bearer for-${endpoint}` }
          },
          createAuthHeaders: async () => {
            all++
            return {}
          },
        },
      })
      await client.getSupported()
      await client.getSupported()
      expect(made).toEqual(['supported', 'supported'])
      expect(all).toBe(0)
      expect(seen).toEqual(['Bearer for-supported', 'Bearer for-supported'])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('sends no Authorization without auth', async () => {
    const client = createHttpFacilitatorClient({
      url: 'http://127.0.0.1:9',
      timeoutMs: 1_000,
      auth: { mode: 'none' },
    })
    expect(await client.createAuthHeaders('verify')).toEqual({ headers: {} })
  })
})

describe('FacilitatorHttpClient: verify and settle over node:http, answering as the SDK client', () => {
  const requirements: PaymentRequirements = {
    scheme: 'exact',
    network: 'eip155:8453',
    amount: '1000',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    maxTimeoutSeconds: 60,
    extra: { name: 'USD Coin', version: '2' },
  }
  const payment: PaymentPayload = {
    x402Version: 2,
    accepted: requirements,
    payload: { signature: '0xabc', authorization: { from: '0x1', nonce: '0x2' } },
    extensions: { 'payment-identifier': { info: { required: false } } },
  }

  /** What the facilitator answers next, and what it received. */
  let next: { status: number; body: string; headers?: Record<string, string>; silent?: boolean }
  const received: { url: string; headers: IncomingHttpHeaders; body: string }[] = []
  let server: Server
  let url: string
  afterAll(async () => {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve))
  })

  const start = async () => {
    if (url) return
    server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        received.push({
          url: req.url ?? '',
          headers: req.headers,
          body: Buffer.concat(chunks).toString(),
        })
        if (next.silent) return
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers })
        res.end(next.body)
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  }

  /** The outcome of one call of each client on the same answer: its value or its error. */
  const both = async (operation: 'verify' | 'settle', p: PaymentPayload = payment) => {
    await start()
    const outcome = (promise: Promise<unknown>) =>
      promise.then(
        (value) => ({ value }),
        (error: Error) => ({
          error: { class: error.constructor.name, ...error, message: error.message },
        }),
      )
    received.length = 0
    const sdk = await outcome(
      new HTTPFacilitatorClient({ url, timeoutMs: 300 })[operation](p, requirements),
    )
    const ours = await outcome(
      new FacilitatorHttpClient({ url, timeoutMs: 300 })[operation](p, requirements),
    )
    return { sdk, ours }
  }

  const verify = JSON.stringify({ isValid: true, payer: '0x1', invalidReason: null })
  const settle = JSON.stringify({
    success: true,
    transaction: '0xdef',
    network: 'eip155:8453',
    payer: '0x1',
    unknownField: 1,
  })
  const extensionResponses = Buffer.from(
    JSON.stringify({ bazaar: { status: 'success' } }),
  ).toString('base64')
  const cases: [string, 'verify' | 'settle', typeof next][] = [
    ['a valid VerifyResponse', 'verify', { status: 200, body: verify }],
    ['a valid SettleResponse', 'settle', { status: 200, body: settle }],
    [
      'an EXTENSION-RESPONSES header',
      'settle',
      { status: 200, body: settle, headers: { 'EXTENSION-RESPONSES': extensionResponses } },
    ],
    ['an answer that is not JSON', 'verify', { status: 200, body: '<html>ok</html>' }],
    ['JSON that is no SettleResponse', 'settle', { status: 200, body: '{"success":"yes"}' }],
    [
      'a 400 verdict',
      'verify',
      { status: 400, body: '{"isValid":false,"invalidReason":"insufficient_funds","payer":"0x1"}' },
    ],
    [
      'a 500 SettleResponse',
      'settle',
      { status: 500, body: '{"success":false,"errorReason":"x","transaction":"","network":"n"}' },
    ],
    ['a 503 with another JSON', 'settle', { status: 503, body: '{"error":  "overloaded"}' }],
    ['a 502 that is not JSON', 'verify', { status: 502, body: `bad ${'gateway '.repeat(60)}` }],
    ['an empty 500', 'settle', { status: 500, body: '' }],
    ['no answer within the timeout', 'settle', { status: 200, body: '', silent: true }],
  ]

  it.each(cases)('answers as the SDK to %s', async (_, operation, answer) => {
    next = answer
    const { sdk, ours } = await both(operation)
    expect(ours).toEqual(sdk)
  })

  it('does not follow a redirect (the SDK does): both fail, as a failure of the facilitator', async () => {
    next = { status: 301, body: '', headers: { location: '/elsewhere' } }
    const { sdk, ours } = await both('settle')
    expect(ours).toEqual({
      error: { class: 'Error', message: 'Facilitator settle failed (301): <empty response>' },
    })
    expect(sdk).toMatchObject({ error: { class: 'TypeError', message: 'fetch failed' } })
    const errors = await Promise.all(
      [HTTPFacilitatorClient, FacilitatorHttpClient].map((Client) =>
        new Client({ url, timeoutMs: 300 }).settle(payment, requirements).catch((e: unknown) => e),
      ),
    )
    for (const error of errors) {
      expect(failureKind(error)).toBe('failed')
      expect(neverReached(error)).toBe(false)
    }
  })

  it('sends the very request the SDK sends, BigInts as strings', async () => {
    next = { status: 200, body: verify }
    const withBigInt = { ...payment, payload: { ...payment.payload, value: 10n } }
    const { sdk, ours } = await both('verify', withBigInt as unknown as PaymentPayload)
    expect(ours).toEqual(sdk)
    const [a, b] = received
    expect(b?.url).toBe('/verify')
    expect(b?.body).toBe(a?.body)
    expect(JSON.parse(b?.body ?? '')).toMatchObject({
      paymentPayload: { payload: { value: '10' } },
    })
    expect(b?.headers['content-type']).toBe('application/json')
  })

  it('sends for a settle the body its verify sent, and a new one for other requirements', async () => {
    await start()
    const client = new FacilitatorHttpClient({ url, timeoutMs: 300 })
    const sent = async (operation: 'verify' | 'settle', r: PaymentRequirements) => {
      received.length = 0
      next = { status: 200, body: operation === 'verify' ? verify : settle }
      await client[operation](payment, r)
      return JSON.parse(received[0]?.body ?? '') as unknown
    }
    const expected = { x402Version: 2, paymentPayload: payment, paymentRequirements: requirements }
    expect(await sent('verify', requirements)).toEqual(expected)
    expect(await sent('settle', requirements)).toEqual(expected)
    // The same payment settled against other requirements (a copy with another amount): its body.
    const other = { ...requirements, amount: '2000' }
    expect(await sent('settle', other)).toEqual({ ...expected, paymentRequirements: other })
    expect(await sent('settle', requirements)).toEqual(expected)
  })

  it(`waits for an answer slower than the ${IDLE_CONNECTION_MS} ms after which idle connections close`, async () => {
    const slow = createServer((req, res) => {
      req.resume()
      req.on('end', () =>
        setTimeout(
          () =>
            res
              .writeHead(200, { 'content-type': 'application/json' })
              .end('{"isValid":true,"payer":"0x1"}'),
          IDLE_CONNECTION_MS + 500,
        ),
      )
    })
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    try {
      const client = new FacilitatorHttpClient({
        url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`,
        timeoutMs: IDLE_CONNECTION_MS + 10_000,
      })
      expect(await client.verify(payment, requirements)).toEqual({ isValid: true, payer: '0x1' })
    } finally {
      slow.closeAllConnections()
      await new Promise((resolve) => slow.close(resolve))
    }
  }, 30_000)

  it('bounds a settle by its own timeout (FACILITATOR_SETTLE_TIMEOUT_MS), a verify by FACILITATOR_TIMEOUT_MS', async () => {
    // Both answers come late: past the verify's bound, within the settle's own, longer one.
    const slow = createServer((req, res) => {
      req.resume()
      const body = req.url?.endsWith('/settle')
        ? '{"success":true,"transaction":"0xfeed","network":"eip155:8453"}'
        : '{"isValid":true,"payer":"0x1"}'
      req.on('end', () =>
        setTimeout(() => res.writeHead(200, { 'content-type': 'application/json' }).end(body), 400),
      )
    })
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve))
    try {
      const client = new FacilitatorHttpClient(
        { url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`, timeoutMs: 100 },
        3_000,
      )
      expect(client.settleTimeoutMs).toBe(3_000)
      await expect(client.verify(payment, requirements)).rejects.toBeInstanceOf(
        FacilitatorTimeoutError,
      )
      expect(await client.settle(payment, requirements)).toEqual({
        success: true,
        transaction: '0xfeed',
        network: 'eip155:8453',
      })
    } finally {
      slow.closeAllConnections()
      await new Promise((resolve) => slow.close(resolve))
    }
  }, 30_000)

  it(`refuses an answer larger than ${MAX_FACILITATOR_ANSWER_BYTES} bytes`, async () => {
    next = { status: 200, body: `"${'x'.repeat(MAX_FACILITATOR_ANSWER_BYTES)}"` }
    await start()
    const error = await new FacilitatorHttpClient({ url, timeoutMs: 5_000 })
      .settle(payment, requirements)
      .catch((e: unknown) => e)
    expect(error).toMatchObject({
      name: 'FacilitatorResponseError',
      message: `Facilitator settle answered more than ${MAX_FACILITATOR_ANSWER_BYTES} bytes`,
    })
  })
})
