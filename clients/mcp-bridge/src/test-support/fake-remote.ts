import { createHash, createPublicKey, generateKeyPairSync, type KeyObject } from 'node:crypto'
import type { CallToolResult, Tool } from '@modelcontextprotocol/client'
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types'
import canonicalize from 'canonicalize'
import { createLocalJWKSet, type JWTPayload, SignJWT } from 'jose'
import type { RemoteService } from '../bridge.js'
import { BASE, baseOffer, paymentRequired, solanaOffer } from './offers.js'

// A stand-in for the service's MCP endpoint in the bridge's unit tests, answering as the real one
// does (src/mcp/results.ts of the service): unpaid -> isError with the PaymentRequired, paid ->
// {ok, result} with the SettleResponse and its signed delivery receipt (src/receipts of the
// service). The end-to-end tests use the real service instead.

/** The fake service's receipt key, and the key set a bridge under test verifies against. */
export const RECEIPT_KEY = generateKeyPairSync('ed25519').privateKey
const publicJwk = createPublicKey(RECEIPT_KEY).export({ format: 'jwk' })
export const RECEIPT_KID = 'fake-kid'
export const RECEIPT_KEYS = createLocalJWKSet({
  keys: [{ ...publicJwk, kid: RECEIPT_KID, alg: 'EdDSA' }],
})

/** The fake tools' one schema default, as the service's Zod schema would apply it. */
const DEFAULTS = { algorithm: 'SHA-256' }

/**
 * A listed tool with its price in `_meta["x402/price"]` and its id in `_meta["payload-tools/tool"]`,
 * like the service's tools/list.
 */
export function listedTool(name: string, amount: string | undefined): Tool {
  const display = amount === undefined ? '' : ` Price: ${Number(amount) / 1e6} USDC per call.`
  return {
    name,
    description: `The ${name} tool.${display}`,
    inputSchema: {
      type: 'object',
      properties: {
        input: { type: 'string' },
        algorithm: { type: 'string', default: DEFAULTS.algorithm },
      },
    },
    outputSchema: { type: 'object' },
    _meta: {
      'payload-tools/tool': name.replace(/^payload_/, ''),
      ...(amount === undefined ? {} : { 'x402/price': { amount, currency: 'USDC', decimals: 6 } }),
    },
  }
}

/** How the fake answers a paid call; the default settles on the offer's network. */
export type PaidAnswer = (
  payment: PaymentPayload,
  name: string,
  args: Record<string, unknown> | undefined,
) => Promise<CallToolResult>

export interface FakeRemote extends RemoteService {
  tools: Tool[]
  /** The accepts of the next 402s, per tool; default both rails at the listed price. */
  accepts: Map<string, PaymentRequirements[]>
  /** Input check of the next unpaid answers, if any. */
  inputCheck?: { valid: boolean; errors: { path: string; message: string }[] }
  paidAnswer: PaidAnswer
  /** Every payment the fake received, in order. */
  payments: PaymentPayload[]
  unpaidCalls: number
  /** When set, every request rejects with this error (the service is down). */
  down?: Error
}

/** A receipt as the facilitator returns it. */
export const receipt = (payment: PaymentPayload, success = true): SettleResponse => ({
  success,
  transaction: success ? '0xfeed' : '',
  network: payment.accepted.network,
  ...(success ? {} : { errorReason: 'invalid_exact_evm_payload_recipient_mismatch' }),
})

const sha256 = (value: unknown) =>
  createHash('sha256')
    .update(canonicalize(value) ?? '')
    .digest('hex')

/** A delivery receipt as the service signs it (header `alg`, `kid`, `typ`). */
export const signReceipt = (claims: JWTPayload, key: KeyObject = RECEIPT_KEY, kid = RECEIPT_KID) =>
  new SignJWT(claims)
    .setProtectedHeader({ alg: 'EdDSA', kid, typ: 'delivery-receipt+jwt' })
    .sign(key)

/** The claims the service signs for a paid call of `name` with `args` that gave `result`. */
export const claimsOf = (
  payment: PaymentPayload,
  name: string,
  args: Record<string, unknown> | undefined,
  result: unknown,
): JWTPayload => ({
  iss: 'http://127.0.0.1:1',
  iat: 1_700_000_000,
  resource: 'http://127.0.0.1:1/mcp',
  tool: name.replace(/^payload_/, ''),
  input_sha256: sha256({ ...DEFAULTS, ...args }),
  result_sha256: sha256(result),
  network: payment.accepted.network,
  asset: payment.accepted.asset,
  amount: payment.accepted.amount,
  pay_to: payment.accepted.payTo,
  transaction: '0xfeed',
})

/** The success answer of the service for a paid call, with `receipt` as its delivery receipt. */
export const settledWith = (payment: PaymentPayload, result: unknown, deliveryReceipt?: string) => {
  const envelope = { ok: true, result }
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(envelope) }],
    structuredContent: envelope,
    _meta: {
      'x402/payment-response': {
        ...receipt(payment),
        ...(deliveryReceipt === undefined
          ? {}
          : { extensions: { 'delivery-receipt': { info: { receipt: deliveryReceipt } } } }),
      },
    },
  }
}

/** The success answer of the service for a paid call, its receipt signed for this call. */
export const settled = async (
  payment: PaymentPayload,
  name = 'payload_hash',
  args: Record<string, unknown> | undefined = {},
  result: unknown = { echoed: true },
) => settledWith(payment, result, await signReceipt(claimsOf(payment, name, args, result)))

export function fakeRemote(tools: Tool[]): FakeRemote {
  const fake: FakeRemote = {
    tools,
    accepts: new Map(),
    paidAnswer: (payment, name, args) => settled(payment, name, args),
    payments: [],
    unpaidCalls: 0,
    async listTools() {
      if (fake.down) throw fake.down
      return fake.tools
    },
    async callTool(name, args, meta) {
      if (fake.down) throw fake.down
      const payment = meta?.['x402/payment'] as PaymentPayload | undefined
      if (payment) {
        fake.payments.push(payment)
        return fake.paidAnswer(payment, name, args)
      }
      fake.unpaidCalls += 1
      const price =
        (
          fake.tools.find((t) => t.name === name)?._meta?.['x402/price'] as
            | { amount: string }
            | undefined
        )?.amount ?? '1000'
      const required = paymentRequired(
        fake.accepts.get(name) ?? [baseOffer(price), solanaOffer(price)],
        name,
      )
      const envelope = {
        ok: false,
        error: `Payment required: ${name}`,
        code: 'payment_required',
        ...(fake.inputCheck ? { input_check: fake.inputCheck } : {}),
      }
      return {
        isError: true,
        content: [{ type: 'text', text: JSON.stringify(required) }],
        structuredContent: required as unknown as Record<string, unknown>,
        _meta: { 'payload-tools/failure': envelope },
      }
    },
  }
  return fake
}

export { BASE }
