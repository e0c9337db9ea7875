import { createHash, createPublicKey, generateKeyPairSync } from 'node:crypto'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import {
  extractOffersFromPaymentRequired,
  extractReceiptFromResponse,
  type JWSSignedOffer,
  type JWSSignedReceipt,
  verifyOfferSignatureJWS,
  verifyReceiptSignatureJWS,
} from '@x402/extensions/offer-receipt'
import canonicalize from 'canonicalize'
import {
  base64url,
  createLocalJWKSet,
  decodeJwt,
  type JSONWebKeySet,
  type JWTPayload,
  jwtVerify,
  SignJWT,
} from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { catalog, findToolByPath } from '../src/tools/catalog.js'
import type { ToolDefinition, ToolEnv } from '../src/tools/types.js'
import { paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, type Rail } from './helpers/rails.js'
import {
  type DevService,
  type RunningService,
  startDevService,
  startService,
} from './helpers/service.js'

// Signed delivery receipts end to end, on the devnet (anvil, litesvm, the official facilitator),
// paid with the official x402 clients over HTTP and MCP. Every receipt is checked offline with
// jose against the JWKS the service publishes, and its digests against an independent RFC 8785
// serialisation (the canonicalize package) of the input as the tool's schema reads it and of the
// result received. One dev stack; calls one after another.

const NOW = 1_700_000_000
const clock: ToolEnv = { nowSeconds: () => NOW }
const RAILS: Rail[] = ['evm', 'solana']
const pem = () =>
  generateKeyPairSync('ed25519').privateKey.export({ type: 'pkcs8', format: 'pem' }) as string
const KEY_A = pem()
const KEY_B = pem()

let dev: DevService
let stack: DevStack
let svc: RunningService
let base: string
let jwks: JSONWebKeySet
let mcp: Client

beforeAll(async () => {
  dev = await startDevService({ payers: 2, clock, env: { RECEIPT_SIGNING_KEY: KEY_A } })
  ;({ stack, svc } = dev)
  base = svc.baseUrl
  jwks = (await json(await fetch(`${base}/.well-known/jwks.json`))) as JSONWebKeySet
  mcp = new Client({ name: 'receipts-e2e', version: '1.0.0' })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`)))
}, 120_000)
afterAll(async () => {
  await mcp?.close()
  await dev?.stop()
})

const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')
const networkOf = (rail: Rail) => (rail === 'evm' ? 'eip155:8453' : stack.solana.network)
const deliveryReceiptOf = (settlement: SettleResponse) =>
  (settlement.extensions?.['delivery-receipt'] as { info: { receipt: string } } | undefined)?.info
    .receipt as string

/**
 * An example body with the fields that equal their schema default left out, so that the checked
 * input (defaults applied) differs from the body for hash and hmac.
 */
function bodyOf(tool: ToolDefinition): Record<string, unknown> {
  const example = tool.examples[0] as Record<string, unknown>
  const defaults = tool.input.parse({ ...example }) as Record<string, unknown>
  const body = { ...example }
  for (const [key, value] of Object.entries(example)) {
    const { [key]: _dropped, ...rest } = body
    const parsed = tool.input.safeParse(rest)
    if (parsed.success && (parsed.data as Record<string, unknown>)[key] === value) delete body[key]
    expect(defaults[key]).toEqual(value)
  }
  return body
}

/** Checks a receipt offline: jose, the published JWKS, and every claim computed independently. */
async function expectReceipt(
  settlement: SettleResponse,
  call: { tool: ToolDefinition; body: unknown; result: unknown; resource: string; rail: Rail },
  accepts: PaymentRequired['accepts'],
) {
  const receipt = deliveryReceiptOf(settlement)
  const { payload, protectedHeader } = await jwtVerify(receipt, createLocalJWKSet(jwks), {
    algorithms: ['EdDSA'],
    issuer: base,
    typ: 'delivery-receipt+jwt',
  })
  expect(protectedHeader).toEqual({
    alg: 'EdDSA',
    kid: jwks.keys[0]?.kid,
    typ: 'delivery-receipt+jwt',
  })
  const offered = accepts.find((a) => a.network === networkOf(call.rail))
  expect(payload).toEqual({
    iss: base,
    iat: NOW,
    resource: call.resource,
    tool: call.tool.id,
    input_sha256: sha256(call.tool.input.parse(call.body)),
    result_sha256: sha256(call.result),
    network: networkOf(call.rail),
    asset: offered?.asset,
    amount: call.tool.price,
    pay_to: offered?.payTo,
    transaction: settlement.transaction,
  })
  return receipt
}

describe('the keys', () => {
  it('publishes the JWKS (kid = RFC 7638 thumbprint) and the DID document', async () => {
    const res = await fetch(`${base}/.well-known/jwks.json`)
    expect(res.status).toBe(200)
    expect(res.headers.get('content-type')).toBe('application/jwk-set+json')
    const { x } = createPublicKey(KEY_A).export({ format: 'jwk' }) as { x: string }
    const kid = createHash('sha256')
      .update(JSON.stringify({ crv: 'Ed25519', kty: 'OKP', x }))
      .digest('base64url')
    expect(await json(res)).toEqual({
      keys: [{ kty: 'OKP', crv: 'Ed25519', x, kid, alg: 'EdDSA', use: 'sig' }],
    })
    const did = `did:web:${encodeURIComponent(new URL(base).host)}`
    expect(await json(await fetch(`${base}/.well-known/did.json`))).toMatchObject({
      id: did,
      assertionMethod: [`${did}#${kid}`],
    })
  })
})

describe('HTTP: every tool on both rails', () => {
  for (const tool of catalog) {
    it(`${tool.id}: the 402 carries signed offers; the 200 a delivery receipt and the official receipt`, async () => {
      const body = bodyOf(tool)
      const unpaid = await fetch(`${base}${tool.path}`, { method: 'POST', body: '{}' })
      const required = decodeRequired(unpaid)
      const offers = extractOffersFromPaymentRequired(required) as JWSSignedOffer[]
      expect(offers).toHaveLength(2)
      // The SDK's own verification, resolving the did:web kid through our DID document.
      for (const [i, offer] of offers.entries()) {
        const terms = await verifyOfferSignatureJWS(offer)
        const { network, asset, payTo, amount } = required.accepts[i] as PaymentRequirements
        expect(terms).toMatchObject({
          resourceUrl: `${base}${tool.path}`,
          network,
          asset,
          payTo,
          amount,
        })
      }
      for (const rail of RAILS) {
        const pay = await paidFetch(payerKeys(stack, rail, 0), rail)
        const res = await pay(`${base}${tool.path}`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        })
        expect(res.status).toBe(200)
        const { result } = await json(res)
        expect(result).toEqual(JSON.parse(JSON.stringify(tool.run(tool.input.parse(body), clock))))
        const settlement = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
        const resource = `${base}${tool.path}`
        await expectReceipt(settlement, { tool, body, result, resource, rail }, required.accepts)
        const official = extractReceiptFromResponse(res) as JWSSignedReceipt
        expect(await verifyReceiptSignatureJWS(official)).toEqual({
          version: 1,
          network: networkOf(rail),
          resourceUrl: resource,
          payer: rail === 'evm' ? stack.evm.payers[0]?.address : stack.solana.payers[0]?.address,
          issuedAt: expect.any(Number),
          transaction: settlement.transaction,
        })
      }
    }, 60_000)
  }
})

type PaymentRequirements = PaymentRequired['accepts'][number]

function decodeRequired(res: Response): PaymentRequired {
  expect(res.status).toBe(402)
  return JSON.parse(
    Buffer.from(res.headers.get('PAYMENT-REQUIRED') ?? '', 'base64').toString(),
  ) as PaymentRequired
}

const mcpCall = (name: string, args: unknown, payment?: PaymentPayload) =>
  mcp.callTool({
    name,
    arguments: args as Record<string, unknown>,
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  }) as Promise<CallToolResult>

describe('MCP: every tool on both rails', () => {
  for (const tool of catalog) {
    it(`${tool.mcpName}: _meta["x402/payment-response"] carries the compact delivery receipt`, async () => {
      const body = bodyOf(tool)
      for (const rail of RAILS) {
        const unpaid = await mcpCall(tool.mcpName, body)
        const required = unpaid.structuredContent as PaymentRequired
        expect(extractOffersFromPaymentRequired(required)).toHaveLength(2)
        const client = await payerClient(payerKeys(stack, rail, 1), rail)
        const paid = await mcpCall(tool.mcpName, body, await client.createPaymentPayload(required))
        expect(paid.isError).toBeUndefined()
        const { result } = paid.structuredContent as { result: unknown }
        const settlement = paid._meta?.['x402/payment-response'] as SettleResponse
        const resource = `${base}/mcp`
        const receipt = await expectReceipt(
          settlement,
          { tool, body, result, resource, rail },
          required.accepts,
        )
        // The compact form (src/receipts/compact.ts): the JWS and its digests, no schema, no
        // offer-receipt receipt (HTTP's PAYMENT-RESPONSE carries those).
        expect(settlement.extensions).toEqual({
          'delivery-receipt': {
            info: {
              receipt,
              input_sha256: sha256(tool.input.parse(body)),
              result_sha256: sha256(result),
            },
          },
        })
      }
    }, 60_000)
  }
})

/** One paid call of `tool` with `body` on Base, kept for the verification tests. */
async function paidCall(path: string, body: unknown) {
  const tool = findToolByPath(path) as ToolDefinition
  const pay = await paidFetch(payerKeys(stack, 'evm', 1), 'evm')
  const res = await pay(`${base}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status).toBe(200)
  const { result } = await json(res)
  const settlement = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
  return { tool, body, result, receipt: deliveryReceiptOf(settlement), settlement }
}

const verify = async (request: unknown, at = base) => {
  const res = await fetch(`${at}/receipts/verify`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(request),
  })
  return { status: res.status, body: await json(res) }
}

/** The receipt with its payload replaced and its signature kept. */
function withPayload(receipt: string, payload: JWTPayload): string {
  const [header, , signature] = receipt.split('.')
  return `${header}.${base64url.encode(JSON.stringify(payload))}.${signature}`
}

describe('POST /receipts/verify', () => {
  let hash: Awaited<ReturnType<typeof paidCall>>
  let jwt: Awaited<ReturnType<typeof paidCall>>
  beforeAll(async () => {
    hash = await paidCall('/hash', { input: 'receipt me' })
    jwt = await paidCall('/jwt-inspect', catalog.find((t) => t.id === 'jwt-inspect')?.examples[0])
  }, 60_000)

  it('a genuine receipt with its input and result: signature, digests and the recomputation match', async () => {
    const { status, body } = await verify({
      receipt: hash.receipt,
      input: hash.body,
      result: hash.result,
    })
    expect(status).toBe(200)
    expect(body).toEqual({
      valid: true,
      message: `The receipt is signed by this service (key ${jwks.keys[0]?.kid} (current)); the input matches input_sha256, the result matches result_sha256, running hash again gives the same result.`,
      signature: { valid: true, kid: jwks.keys[0]?.kid, key: 'current' },
      claims: decodeJwt(hash.receipt),
      checks: { input: 'match', result: 'match', recomputed: 'match' },
    })
  })

  it('recomputes a clock-reading tool (jwt-inspect) at the receipt iat', async () => {
    const { body } = await verify({ receipt: jwt.receipt, input: jwt.body, result: jwt.result })
    expect(body.checks).toEqual({ input: 'match', result: 'match', recomputed: 'match' })
    expect(jwt.result.validity.now).toBe(decodeJwt(jwt.receipt).iat)
  })

  it('the receipt alone: signature and claims only', async () => {
    const { body } = await verify({ receipt: hash.receipt })
    expect(body).toMatchObject({
      valid: true,
      checks: { input: 'not_given', result: 'not_given', recomputed: 'not_run' },
    })
  })

  it('refuses a receipt with one claim changed: bad_signature, nothing checked or run', async () => {
    const claims = decodeJwt(hash.receipt)
    const forged = withPayload(hash.receipt, { ...claims, amount: '1' })
    const { status, body } = await verify({
      receipt: forged,
      input: hash.body,
      result: hash.result,
    })
    expect(status).toBe(200)
    expect(body).toEqual({
      valid: false,
      reason: 'bad_signature',
      message: `The signature does not match the receipt's content for key "${jwks.keys[0]?.kid}": it was altered or signed by another key`,
      signature: { valid: false, kid: jwks.keys[0]?.kid },
      checks: { input: 'not_checked', result: 'not_checked', recomputed: 'not_run' },
    })
  })

  it('refuses a result changed by one byte: result_mismatch', async () => {
    const hex = hash.result.hex as string
    const changed = { ...hash.result, hex: `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}` }
    const { body } = await verify({ receipt: hash.receipt, result: changed })
    expect(body).toMatchObject({
      valid: false,
      reason: 'result_mismatch',
      signature: { valid: true },
      checks: { input: 'not_given', result: 'mismatch', recomputed: 'not_run' },
    })
    expect(body.message).toContain("The result's digest is not the receipt's result_sha256")
  })

  it('refuses a key not in the JWKS: unknown_key', async () => {
    const foreign = generateKeyPairSync('ed25519').privateKey
    const receipt = await new SignJWT(decodeJwt(hash.receipt))
      .setProtectedHeader({ alg: 'EdDSA', kid: 'not-ours', typ: 'delivery-receipt+jwt' })
      .sign(foreign)
    const { body } = await verify({ receipt, input: hash.body, result: hash.result })
    expect(body).toEqual({
      valid: false,
      reason: 'unknown_key',
      message: `The receipt's key "not-ours" is not in this service's JWKS (current or retired keys)`,
      signature: { valid: false, kid: 'not-ours' },
      checks: { input: 'not_checked', result: 'not_checked', recomputed: 'not_run' },
    })
  })

  it('another input: input_mismatch and the tool is not run; an invalid one: input_invalid', async () => {
    const other = await verify({ receipt: hash.receipt, input: { input: 'receipt you' } })
    expect(other.body).toMatchObject({
      valid: false,
      reason: 'input_mismatch',
      checks: { input: 'mismatch', recomputed: 'not_run' },
    })
    // The defaults are applied before the digest: the same input spelled in full matches.
    const full = await verify({
      receipt: hash.receipt,
      input: { input: 'receipt me', algorithm: 'SHA-256' },
    })
    expect(full.body.checks.input).toBe('match')
    const invalid = await verify({ receipt: hash.receipt, input: { input: 1 } })
    expect(invalid.body).toMatchObject({
      valid: false,
      reason: 'input_invalid',
      checks: { input: 'invalid', recomputed: 'not_run' },
      input_errors: [{ path: '/input', message: expect.any(String) }],
    })
  })

  it('refuses a malformed request: 400 invalid_json or invalid_request', async () => {
    const bad = await fetch(`${base}/receipts/verify`, { method: 'POST', body: '{' })
    expect(bad.status).toBe(400)
    expect((await json(bad)).code).toBe('invalid_json')
    const extra = await verify({ receipt: hash.receipt, payer: '0x1' })
    expect(extra.status).toBe(400)
    expect(extra.body.code).toBe('invalid_request')
    const none = await verify({})
    expect(none.status).toBe(400)
    expect(none.body).toMatchObject({ code: 'invalid_request' })
    const get = await fetch(`${base}/receipts/verify`)
    expect(get.status).toBe(405)
  })

  it('a replay (same payment): a delivery receipt with the same digests, no official receipt', async () => {
    const unpaid = await fetch(`${base}/hash`, {
      method: 'POST',
      body: JSON.stringify({ input: 'again' }),
    })
    const client = new x402HTTPClient(await payerClient(payerKeys(stack, 'evm', 1), 'evm'))
    const payment = await client.createPaymentPayload(
      client.getPaymentRequiredResponse((name) => unpaid.headers.get(name)),
    )
    const send = () =>
      fetch(`${base}/hash`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment),
        },
        body: JSON.stringify({ input: 'again' }),
      })
    const first = decodePaymentResponseHeader((await send()).headers.get('PAYMENT-RESPONSE') ?? '')
    const replay = decodePaymentResponseHeader((await send()).headers.get('PAYMENT-RESPONSE') ?? '')
    expect(Object.keys(first.extensions ?? {}).sort()).toEqual([
      'delivery-receipt',
      'offer-receipt',
    ])
    expect(Object.keys(replay.extensions ?? {})).toEqual(['delivery-receipt'])
    expect(decodeJwt(deliveryReceiptOf(replay))).toEqual(decodeJwt(deliveryReceiptOf(first)))
    const { body } = await verify({ receipt: deliveryReceiptOf(replay), input: { input: 'again' } })
    expect(body.checks).toEqual({ input: 'match', result: 'not_given', recomputed: 'match' })
  })

  it('rotation: a receipt signed before the key is retired still verifies after it', async () => {
    const { x } = createPublicKey(KEY_A).export({ format: 'jwk' }) as { x: string }
    const rotated = await startService(
      stack,
      {
        RECEIPT_SIGNING_KEY: KEY_B,
        RECEIPT_RETIRED_KEYS: JSON.stringify([{ kty: 'OKP', crv: 'Ed25519', x }]),
        PUBLIC_BASE_URL: base,
      },
      { env: clock },
    )
    try {
      const keys = (await json(
        await fetch(`${rotated.baseUrl}/.well-known/jwks.json`),
      )) as JSONWebKeySet
      expect(keys.keys.map((k) => k.kid)).toEqual([rotated.service.receipts.kid, jwks.keys[0]?.kid])
      // Offline, against the new JWKS.
      await jwtVerify(hash.receipt, createLocalJWKSet(keys), { issuer: base })
      const { body } = await verify(
        { receipt: hash.receipt, input: hash.body, result: hash.result },
        rotated.baseUrl,
      )
      expect(body).toMatchObject({
        valid: true,
        signature: { valid: true, kid: jwks.keys[0]?.kid, key: 'retired' },
        checks: { input: 'match', result: 'match', recomputed: 'match' },
      })
    } finally {
      await rotated.stop()
    }
  })
})
