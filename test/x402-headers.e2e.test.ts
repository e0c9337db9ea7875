import { randomBytes } from 'node:crypto'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload } from '@x402/core/types'
import type { Hex } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { USDC_EIP712 } from '../src/devnet/usdc.js'
import { MAX_HEADER_BYTES } from '../src/http/node-server.js'
import { MAX_PAYMENT_BYTES } from '../src/payment/gate.js'
import { catalog } from '../src/tools/catalog.js'
import type { ToolEnv } from '../src/tools/types.js'
import { type PayerKeys, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// Malformed x402 payment headers over HTTP on the devnet (anvil, litesvm, the official
// facilitator). Each gets an exact 402 with a reason; none may run a tool or reach /settle. That
// is observed, not assumed: the devnet facilitator counts its /verify and /settle requests, the
// service's payment observer must see no event at all, and both payTo balances must stay put.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
const BODY = { input: 'abc' }
let dev: DevService

beforeAll(async () => {
  dev = await startDevService({ payers: 2, clock })
})
afterAll(() => dev?.stop())

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${dev.svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

/** A real PaymentPayload for `path`, signed by the official client for the 402 it got. */
async function realPayment(path: string, body: unknown, keys: PayerKeys, rail: 'evm' | 'solana') {
  const unpaid = await post(path, body)
  expect(unpaid.status).toBe(402)
  const http = new x402HTTPClient(await payerClient(keys, rail))
  const required = http.getPaymentRequiredResponse((name) => unpaid.headers.get(name))
  return http.createPaymentPayload(required)
}

/**
 * Sends `header` as PAYMENT-SIGNATURE to /hash and checks that nothing reached settlement:
 * /settle never called, /verify called `verifies` times, no PaymentEvent, both payTo balances
 * unchanged. Returns the response and its envelope.
 */
async function sendRefused(header: string, verifies: number) {
  const { stack, events } = dev
  const before = {
    requests: { ...stack.facilitatorRequests },
    evm: await payToBalance(stack, 'evm'),
    solana: await payToBalance(stack, 'solana'),
  }
  events.length = 0
  const res = await post('/hash', BODY, { 'PAYMENT-SIGNATURE': header })
  const body = await json(res)
  expect(stack.facilitatorRequests.settle).toBe(before.requests.settle)
  expect(stack.facilitatorRequests.verify - before.requests.verify).toBe(verifies)
  expect(events).toEqual([])
  expect(await payToBalance(stack, 'evm')).toBe(before.evm)
  expect(await payToBalance(stack, 'solana')).toBe(before.solana)
  return { res, body }
}

/** Checks a 402: exact code and message, the envelope, and a PAYMENT-REQUIRED offering both rails. */
function expect402(
  res: Response,
  body: Record<string, unknown>,
  code: string,
  message: string,
  reason: string,
) {
  expect(res.status).toBe(402)
  expect(body).toEqual({
    ok: false,
    error: message,
    code,
    request_id: res.headers.get('x-request-id'),
  })
  const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
  expect(required.error).toBe(reason)
  expect(required.accepts.map((a) => a.network)).toEqual(['eip155:8453', dev.stack.solana.network])
}

const TRANSFER_WITH_AUTHORIZATION = [
  { name: 'from', type: 'address' },
  { name: 'to', type: 'address' },
  { name: 'value', type: 'uint256' },
  { name: 'validAfter', type: 'uint256' },
  { name: 'validBefore', type: 'uint256' },
  { name: 'nonce', type: 'bytes32' },
] as const

/**
 * An EIP-3009 `exact` payment built by hand (the official client always signs a currently valid
 * window with its own key): the authorization names `from`, the EIP-712 signature on the USDC
 * domain ("USD Coin", version "2", chain 8453) is made with `signer`.
 */
async function handSigned(options: {
  from: Hex
  signer: Hex
  validAfter: number
  validBefore: number
}): Promise<string> {
  const base = await realPayment('/hash', BODY, { evmPrivateKey: options.from }, 'evm')
  const authorization = {
    from: privateKeyToAccount(options.from).address,
    to: base.accepted.payTo as Hex,
    value: base.accepted.amount,
    validAfter: String(options.validAfter),
    validBefore: String(options.validBefore),
    nonce: `0x${randomBytes(32).toString('hex')}` as Hex,
  }
  const signature = await privateKeyToAccount(options.signer).signTypedData({
    domain: { ...USDC_EIP712, chainId: 8453, verifyingContract: dev.stack.evm.usdcAddress },
    types: { TransferWithAuthorization: TRANSFER_WITH_AUTHORIZATION },
    primaryType: 'TransferWithAuthorization',
    message: {
      ...authorization,
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
    },
  })
  return encodePaymentSignatureHeader({ ...base, payload: { authorization, signature } })
}

const evmKey = (index: number) => dev.stack.evm.payers[index]?.privateKey as Hex
const nowSeconds = () => Math.floor(Date.now() / 1000)

describe('malformed PAYMENT-SIGNATURE headers on the devnet', () => {
  it('refuses a header that is not Base64', async () => {
    const { res, body } = await sendRefused('%%% not base64 %%%', 0)
    expect402(
      res,
      body,
      'invalid_payment',
      'The payment could not be read: PAYMENT-SIGNATURE is not Base64 (RFC 4648 section 4)',
      'invalid_payload',
    )
  })

  it('refuses Base64 of something that is not JSON', async () => {
    const { res, body } = await sendRefused(Buffer.from('not json').toString('base64'), 0)
    expect402(
      res,
      body,
      'invalid_payment',
      'The payment could not be read: PAYMENT-SIGNATURE is Base64, but not of a JSON PaymentPayload',
      'invalid_payload',
    )
  })

  it('refuses x402Version 1', async () => {
    const payment = await realPayment('/hash', BODY, payerKeys(dev.stack, 'evm', 0), 'evm')
    const v1 = encodePaymentSignatureHeader({ ...payment, x402Version: 1 } as PaymentPayload)
    const { res, body } = await sendRefused(v1, 0)
    expect402(
      res,
      body,
      'invalid_payment',
      'The payment is not a valid x402 v2 PaymentPayload of scheme exact: Invalid input: expected 2 at x402Version',
      'invalid_payload',
    )
  })

  it.each([
    ['an unknown scheme', { scheme: 'upto' }, 'scheme "upto" is not offered (offered: "exact")'],
    [
      'the wrong network',
      { network: 'eip155:1' },
      'network "eip155:1" is not offered (offered: "eip155:8453", "NETWORK")',
    ],
    [
      'the wrong amount',
      { amount: '999' },
      'amount "999" is not the offered "1000" for exact on eip155:8453',
    ],
    [
      'the wrong asset',
      { asset: '0x0000000000000000000000000000000000000001' },
      'asset "0x0000000000000000000000000000000000000001" is not the offered "ASSET" for exact on eip155:8453',
    ],
    [
      'the wrong payTo',
      { payTo: '0x0000000000000000000000000000000000000002' },
      'payTo "0x0000000000000000000000000000000000000002" is not the offered "PAYTO" for exact on eip155:8453',
    ],
  ])('refuses %s in the accepted requirements', async (_name, change, detail) => {
    const payment = await realPayment('/hash', BODY, payerKeys(dev.stack, 'evm', 0), 'evm')
    const header = encodePaymentSignatureHeader({
      ...payment,
      accepted: { ...payment.accepted, ...change },
    } as PaymentPayload)
    const { res, body } = await sendRefused(header, 0)
    const expected = detail
      .replace('NETWORK', dev.stack.solana.network)
      .replace('ASSET', dev.stack.evm.usdcAddress)
      .replace('PAYTO', dev.stack.evm.payTo)
    expect402(
      res,
      body,
      'invalid_payment',
      `The payment matches none of the offered rails: ${expected}`,
      'No matching payment requirements',
    )
  })

  it.each([
    [
      'an expired authorization (validBefore in the past)',
      () => ({ validAfter: nowSeconds() - 600, validBefore: nowSeconds() - 60 }),
      'the authorization has expired (validBefore)',
    ],
    [
      'a not-yet-valid authorization (validAfter in the future)',
      () => ({ validAfter: nowSeconds() + 3600, validBefore: nowSeconds() + 30 }),
      'the authorization is not valid yet (validAfter)',
    ],
    [
      'an authorization valid for a year',
      () => ({ validAfter: nowSeconds() - 600, validBefore: nowSeconds() + 365 * 86400 }),
      /^the authorization is valid for 3153\d{4} s; the offer allows at most 120 s \(maxTimeoutSeconds\)$/,
    ],
  ])('refuses %s before the facilitator is asked', async (_name, window, reason) => {
    const header = await handSigned({ from: evmKey(0), signer: evmKey(0), ...window() })
    const { res, body } = await sendRefused(header, 0)
    const detail = String(body.error).replace(/^The payment is refused: /, '')
    if (typeof reason === 'string') expect(detail).toBe(reason)
    else expect(detail).toMatch(reason)
    expect402(res, body, 'invalid_payment', `The payment is refused: ${detail}`, 'invalid_payload')
  })

  it('refuses an authorization from one payer signed with another key', async () => {
    const header = await handSigned({
      from: evmKey(0),
      signer: evmKey(1),
      validAfter: nowSeconds() - 600,
      validBefore: nowSeconds() + 60,
    })
    const { res, body } = await sendRefused(header, 1)
    const reason = 'invalid_exact_evm_signature'
    expect402(
      res,
      body,
      'payment_verification_failed',
      `The facilitator rejected the payment: ${reason}`,
      reason,
    )
  })

  it('refuses a 64 KiB header with a reason (not a bare 431) before decoding it', async () => {
    const header = 'A'.repeat(64 * 1024)
    const { res, body } = await sendRefused(header, 0)
    expect402(
      res,
      body,
      'invalid_payment',
      `The payment could not be read: PAYMENT-SIGNATURE is 65536 bytes; the limit is ${MAX_PAYMENT_BYTES / 1024} KiB`,
      'invalid_payload',
    )
    // Past the server's own 128 KiB head limit, node:http answers 431 before any of our code.
    const huge = await post('/hash', BODY, { 'PAYMENT-SIGNATURE': 'A'.repeat(MAX_HEADER_BYTES) })
    expect(huge.status).toBe(431)
  })

  it('leaves ample room under the 32 KiB limit for the largest real PaymentPayload', async () => {
    const sizes: Array<[string, number]> = []
    for (const tool of catalog) {
      for (const rail of ['evm', 'solana'] as const) {
        const payment = await realPayment(
          tool.path,
          tool.examples[0],
          payerKeys(dev.stack, rail, 1),
          rail,
        )
        sizes.push([`${tool.path} ${rail}`, encodePaymentSignatureHeader(payment).length])
      }
    }
    sizes.sort((a, b) => b[1] - a[1])
    const [largest, bytes] = sizes[0] as [string, number]
    console.log(
      `[x402] largest real PAYMENT-SIGNATURE: ${bytes} bytes (${largest}); limit ${MAX_PAYMENT_BYTES}`,
    )
    // Measured 11,416 bytes (/pipeline on Solana: the transaction plus the echoed extensions: the
    // bazaar schema, 8,468 bytes before the offer-receipt extension, whose two signed offers and
    // schema the official client echoes too, about 3 KB).
    expect(bytes).toBeLessThan(MAX_PAYMENT_BYTES / 2)
  })
})
