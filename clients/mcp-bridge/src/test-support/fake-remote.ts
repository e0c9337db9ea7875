import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types'
import type { RemoteService } from '../bridge.js'
import { BASE, baseOffer, paymentRequired, solanaOffer } from './offers.js'

// A stand-in for the service's MCP endpoint in the bridge's unit tests, answering as the real one
// does (src/mcp/results.ts of the service): unpaid -> isError with the PaymentRequired, paid ->
// {ok, result} with the SettleResponse. The end-to-end tests use the real service instead.

/** A listed tool with its price in `_meta["x402/price"]`, like the service's tools/list. */
export function listedTool(name: string, amount: string | undefined): Tool {
  const display = amount === undefined ? '' : ` Price: ${Number(amount) / 1e6} USDC per call.`
  return {
    name,
    description: `The ${name} tool.${display}`,
    inputSchema: { type: 'object', properties: { input: { type: 'string' } } },
    outputSchema: { type: 'object' },
    ...(amount === undefined
      ? {}
      : { _meta: { 'x402/price': { amount, currency: 'USDC', decimals: 6 } } }),
  }
}

/** How the fake answers a paid call; the default settles on the offer's network. */
export type PaidAnswer = (payment: PaymentPayload, name: string) => Promise<CallToolResult>

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

/** The success answer of the service for a paid call. */
export const settled = (payment: PaymentPayload, result: unknown = { echoed: true }) => {
  const envelope = { ok: true, result }
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(envelope) }],
    structuredContent: envelope,
    _meta: { 'x402/payment-response': receipt(payment) },
  }
}

export function fakeRemote(tools: Tool[]): FakeRemote {
  const fake: FakeRemote = {
    tools,
    accepts: new Map(),
    paidAnswer: async (payment) => settled(payment),
    payments: [],
    unpaidCalls: 0,
    async listTools() {
      if (fake.down) throw fake.down
      return fake.tools
    },
    async callTool(name, _args, meta) {
      if (fake.down) throw fake.down
      const payment = meta?.['x402/payment'] as PaymentPayload | undefined
      if (payment) {
        fake.payments.push(payment)
        return fake.paidAnswer(payment, name)
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
