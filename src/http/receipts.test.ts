import { createHash, generateKeyPairSync } from 'node:crypto'
import canonicalize from 'canonicalize'
import { describe, expect, it, vi } from 'vitest'
import { echoTool, fakeGate, inlineRunner } from '../../test/helpers/fakes.js'
import { json } from '../../test/helpers/json.js'
import { createReceipts, parseSigningKey } from '../receipts/index.js'
import type { ToolDefinition } from '../tools/types.js'
import { createApp, MAX_BODY_BYTES } from './app.js'
import { createRateLimit } from './rate-limit.js'
import { MAX_RECOMPUTES_IN_FLIGHT } from './receipts.js'

// Unit tests of the receipt endpoints in the app: the keys, the bound on recomputations, the
// rate limit and the body limit. The verdicts themselves are tested end to end
// (test/receipts.e2e.test.ts).

const ISS = 'https://tools.example'
const key = parseSigningKey(
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
)
const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')

function setup(options: { points?: number; run?: () => Promise<unknown> } = {}) {
  const receipts = createReceipts({ issuer: ISS, signingKey: key })
  const runner = inlineRunner(options.run ? { run: options.run } : {})
  const { gate } = fakeGate({}, undefined, { runner, receipts })
  const rateLimit = createRateLimit({
    points: options.points ?? 1000,
    durationSeconds: 60,
    trustProxyHops: 0,
  })
  const app = createApp({
    gate,
    tools: [echoTool as ToolDefinition],
    publicBaseUrl: ISS,
    receipts,
    ...(rateLimit ? { rateLimit } : {}),
  })
  const receipt = receipts.deliveryReceipt({
    iat: 1_700_000_000,
    resource: `${ISS}/echo`,
    tool: 'echo',
    input_sha256: sha256({ text: 'abc' }),
    result_sha256: sha256({ upper: 'ABC' }),
    network: 'eip155:8453',
    asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    amount: '1000',
    pay_to: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    transaction: '0xtx',
  })
  const verify = async (body: unknown) =>
    app.request('/receipts/verify', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    })
  return { app, receipts, receipt, verify, runner }
}

describe('receipt endpoints', () => {
  it('serve the JWKS and the DID document, cacheable', async () => {
    const { app, receipts } = setup()
    const jwks = await app.request('/.well-known/jwks.json')
    expect(jwks.status).toBe(200)
    expect(jwks.headers.get('content-type')).toBe('application/jwk-set+json')
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=300')
    expect(await json(jwks)).toEqual({ keys: [key.publicJwk] })
    const did = await app.request('/.well-known/did.json')
    expect(did.headers.get('content-type')).toBe('application/did+json')
    expect(await json(did)).toEqual(receipts.didDocument())
    expect((await app.request('/.well-known/jwks.json', { method: 'POST' })).status).toBe(405)
  })

  it('recompute on a worker, and at most one at a time: the next gets 503 overloaded', async () => {
    expect(MAX_RECOMPUTES_IN_FLIGHT).toBe(1)
    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => {
      release = resolve
    })
    let entered: () => void = () => {}
    const running = new Promise<void>((resolve) => {
      entered = resolve
    })
    const { verify, receipt, runner } = setup({
      run: async () => {
        entered()
        await held
        return { upper: 'ABC' }
      },
    })
    const request = { receipt: await receipt, input: { text: 'abc' } }
    const first = verify(request)
    await running
    const second = await verify(request)
    expect(second.status).toBe(503)
    expect(second.headers.get('retry-after')).toBe('1')
    expect((await json(second)).code).toBe('overloaded')
    // Without an input there is nothing to run: answered at once.
    expect((await verify({ receipt: await receipt })).status).toBe(200)
    release()
    const answer = await first
    expect(answer.status).toBe(200)
    expect((await json(answer)).checks).toEqual({
      input: 'match',
      result: 'not_given',
      recomputed: 'match',
    })
    expect(runner.runs).toBe(1)
    expect((await json(await verify(request))).checks.recomputed).toBe('match')
  })

  it('are rate-limited like every request without a payment', async () => {
    const { verify, receipt } = setup({ points: 2 })
    expect((await verify({ receipt: await receipt })).status).toBe(200)
    expect((await verify({ receipt: await receipt })).status).toBe(200)
    const limited = await verify({ receipt: await receipt })
    expect(limited.status).toBe(429)
    expect((await json(limited)).code).toBe('rate_limited')
  })

  it('charge a verification body a point per started 64 KiB before parsing it: 977 KiB costs 16 points', async () => {
    const big = async (receipt: string) =>
      JSON.stringify({ receipt, input: { text: 'x'.repeat(977 * 1024) } })
    const exact = setup({ points: 16 })
    const body = await big(await exact.receipt)
    expect(Math.ceil(Buffer.byteLength(body) / 65536)).toBe(16)
    // A quota of 16: the body takes all of it; the next request, of one point, is refused.
    expect((await exact.verify(body)).status).toBe(200)
    expect((await exact.verify({ receipt: await exact.receipt })).status).toBe(429)
    // A quota of 15: refused at once, never parsed.
    const short = setup({ points: 15 })
    const fields = vi.spyOn(short.runner, 'fields')
    const refused = await short.verify(await big(await short.receipt))
    expect(refused.status).toBe(429)
    expect((await json(refused)).code).toBe('rate_limited')
    expect(refused.headers.get('ratelimit-policy')).toBe('"free";q=15;w=60')
    expect(fields).not.toHaveBeenCalled()
  })

  it('refuse a body over the tools limit with 413', async () => {
    const { verify, receipt } = setup()
    const big = JSON.stringify({
      receipt: await receipt,
      input: { text: 'x'.repeat(MAX_BODY_BYTES) },
    })
    const res = await verify(big)
    expect(res.status).toBe(413)
    expect((await json(res)).code).toBe('payload_too_large')
  })
})
