import { createServer, type RequestListener, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { HTTPFacilitatorClient } from '@x402/core/server'
import {
  FacilitatorTimeoutError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  VerifyError,
} from '@x402/core/types'
import { afterAll, describe, expect, it } from 'vitest'
import { FacilitatorHttpClient } from './client.js'
import {
  failureKind,
  httpStatusOf,
  logSafe,
  marksDown,
  neverReached,
  shortReason,
} from './failures.js'

// The classifier on the errors the SDK's HTTPFacilitatorClient really throws (undici underneath),
// and ours (node:http underneath) alike, each produced by a real socket: refused, unresolvable,
// silent, reset, and HTTP answers.

const requirements: PaymentRequirements = {
  scheme: 'exact',
  network: 'eip155:8453',
  amount: '1000',
  asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  payTo: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
  maxTimeoutSeconds: 60,
  extra: { name: 'USD Coin', version: '2' },
}
const payload: PaymentPayload = { x402Version: 2, accepted: requirements, payload: {} }

const servers: Server[] = []
afterAll(async () => {
  for (const s of servers) {
    s.closeAllConnections()
    await new Promise((resolve) => s.close(resolve))
  }
})

async function serve(handler: RequestListener): Promise<string> {
  const server = createServer(handler)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

/** A URL on a port nothing listens on (a server bound, then closed). */
async function closedUrl(): Promise<string> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise((resolve) => server.close(resolve))
  return `http://127.0.0.1:${port}`
}

/** The SDK's client, and ours, which sends verify and settle over node:http (client.ts). */
const clients = [
  [
    'the SDK client',
    (config: { url: string; timeoutMs: number }) => new HTTPFacilitatorClient(config),
  ],
  ['our client', (config: { url: string; timeoutMs: number }) => new FacilitatorHttpClient(config)],
] as const

const answer =
  (status: number, body: string): RequestListener =>
  (req, res) => {
    req.resume()
    req.on('end', () => res.writeHead(status, { 'content-type': 'application/json' }).end(body))
  }

describe.each(clients)('neverReached, on the errors of %s', (_, clientOf) => {
  async function settleError(url: string, timeoutMs = 5_000): Promise<unknown> {
    return clientOf({ url, timeoutMs })
      .settle(payload, requirements)
      .then(
        () => expect.unreachable('settle should fail'),
        (error: unknown) => error,
      )
  }

  it('is true for a refused connection (fetch failed, cause ECONNREFUSED)', async () => {
    const error = await settleError(await closedUrl())
    expect(error).toBeInstanceOf(TypeError)
    expect((error as Error).message).toBe('fetch failed')
    expect(((error as Error).cause as { code: string }).code).toBe('ECONNREFUSED')
    expect(neverReached(error)).toBe(true)
    expect(failureKind(error)).toBe('unreachable')
    expect(shortReason(error)).toBe('ECONNREFUSED')
  })

  it('is true for a host that does not resolve (ENOTFOUND)', async () => {
    const error = await settleError('http://facilitator.invalid')
    expect(['ENOTFOUND', 'EAI_AGAIN']).toContain(shortReason(error))
    expect(neverReached(error)).toBe(true)
  })

  it('is false for a timeout: the request may be in flight or done', async () => {
    // Reads the request, never answers.
    const url = await serve((req) => req.resume())
    const error = await settleError(url, 200)
    expect(error).toBeInstanceOf(FacilitatorTimeoutError)
    expect(neverReached(error)).toBe(false)
    expect(failureKind(error)).toBe('timeout')
    expect(shortReason(error)).toBe('timeout')
  })

  it('is false for a connection reset after the request was sent', async () => {
    const url = await serve((req) => {
      req.resume()
      req.on('end', () => req.socket.destroy())
    })
    const error = await settleError(url)
    expect((error as Error).message).toBe('fetch failed')
    expect(neverReached(error)).toBe(false)
    expect(failureKind(error)).toBe('failed')
  })

  it('is false for a 5xx: the facilitator had the request', async () => {
    const error = await settleError(await serve(answer(503, '{"error":"overloaded"}')))
    expect((error as Error).message).toBe('Facilitator settle failed (503): {"error":"overloaded"}')
    expect(neverReached(error)).toBe(false)
    expect(httpStatusOf(error)).toBe(503)
    expect(failureKind(error)).toBe('failed')
    expect(shortReason(error)).toBe('HTTP 503')
  })

  it('reads a 4xx without a verdict as a refusal of the request, 408 and 429 as failures', async () => {
    const rejected = await settleError(await serve(answer(400, '{"error":"bad payload"}')))
    expect(failureKind(rejected)).toBe('rejected')
    expect(neverReached(rejected)).toBe(false)
    expect(failureKind(await settleError(await serve(answer(429, '{}'))))).toBe('failed')
    expect(failureKind(await settleError(await serve(answer(408, '{}'))))).toBe('failed')
  })

  it('is false for a SettleError, and a 4xx one is a verdict', async () => {
    const body =
      '{"success":false,"errorReason":"insufficient_funds","transaction":"","network":"eip155:8453"}'
    const rejected = await settleError(await serve(answer(400, body)))
    expect(rejected).toBeInstanceOf(SettleError)
    expect(neverReached(rejected)).toBe(false)
    expect(failureKind(rejected)).toBe('verdict')
    const crashed = await settleError(await serve(answer(500, body)))
    expect(crashed).toBeInstanceOf(SettleError)
    expect(failureKind(crashed)).toBe('failed')
  })

  it('classifies a 401 or 403 as unauthorized, on /supported as on settle', async () => {
    const cdp = '{"errorType":"unauthorized","errorMessage":"Unauthorized."}'
    const url = await serve(answer(401, cdp))
    const supported = await new HTTPFacilitatorClient({ url, timeoutMs: 5_000 })
      .getSupported()
      .catch((e: unknown) => e)
    expect(failureKind(supported)).toBe('unauthorized')
    expect(shortReason(supported)).toBe('HTTP 401')
    expect(failureKind(await settleError(await serve(answer(403, cdp))))).toBe('unauthorized')
    expect(neverReached(supported)).toBe(false)
  })
})

describe.each(clients)('marksDown, on the errors of %s', (_, clientOf) => {
  const verifyError = (url: string, timeoutMs = 5_000) =>
    clientOf({ url, timeoutMs })
      .verify(payload, requirements)
      .then(
        () => expect.unreachable('verify should fail'),
        (error: unknown) => error,
      )

  it('is true for what says the facilitator is down: refused, silent, reset, 429, 502, 503, 504, 401', async () => {
    expect(marksDown(await verifyError(await closedUrl()))).toBe(true)
    expect(marksDown(await verifyError(await serve(() => {}), 200))).toBe(true)
    const reset = await serve((req) => {
      req.resume()
      req.on('end', () => req.socket.destroy())
    })
    expect(marksDown(await verifyError(reset))).toBe(true)
    for (const status of [429, 502, 503, 504, 401]) {
      expect([status, marksDown(await verifyError(await serve(answer(status, '{}'))))]).toEqual([
        status,
        true,
      ])
    }
  })

  it('is false for an answer about one request: a 500 (a junk payment provokes it), a 4xx, a verdict', async () => {
    const junk = await verifyError(
      await serve(answer(500, '{"error":"Cannot convert x to a BigInt"}')),
    )
    expect(marksDown(junk)).toBe(false)
    expect(logSafe(junk)).toEqual({
      reason: 'HTTP 500',
      detail_chars: (junk as Error).message.length,
    })
    expect(marksDown(await verifyError(await serve(answer(400, '{"error":"bad"}'))))).toBe(false)
    const verdict = await verifyError(
      await serve(answer(400, '{"isValid":false,"invalidReason":"insufficient_funds"}')),
    )
    expect(marksDown(verdict)).toBe(false)
  })
})

describe('neverReached, on errors made by hand', () => {
  it('is true for an AggregateError cause only when every attempt was refused', () => {
    const code = (c: string) => Object.assign(new Error(c), { code: c })
    const refused = new TypeError('fetch failed', {
      cause: Object.assign(new AggregateError([code('ECONNREFUSED'), code('ECONNREFUSED')]), {
        code: 'ECONNREFUSED',
      }),
    })
    expect(neverReached(refused)).toBe(true)
    const mixed = new TypeError('fetch failed', {
      cause: new AggregateError([code('ECONNREFUSED'), code('ECONNRESET')]),
    })
    expect(neverReached(mixed)).toBe(false)
  })

  it('is false for anything else', () => {
    expect(neverReached(undefined)).toBe(false)
    expect(neverReached('ECONNREFUSED')).toBe(false)
    expect(neverReached(new Error('ECONNREFUSED'))).toBe(false)
    expect(neverReached(new VerifyError(400, { isValid: false, invalidReason: 'x' }))).toBe(false)
    expect(failureKind(new VerifyError(400, { isValid: false, invalidReason: 'x' }))).toBe(
      'verdict',
    )
  })
})
