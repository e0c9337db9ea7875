import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402Client } from '@x402/core/client'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import {
  BatchSettlementEvmScheme,
  InMemoryClientChannelStorage,
} from '@x402/evm/batch-settlement/client'
import { createPublicClient, http } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { hashTool } from '../src/tools/hash.js'
import { settleForPayTo } from './helpers/escrow.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'

// Prepaid channels over MCP: the official MCP client (Client + StreamableHTTPClientTransport)
// and the official x402 client with the batch-settlement client scheme, its PaymentPayload in
// `_meta["x402/payment"]` of `tools/call`. The payment gate is the one HTTP uses: a deposit, then
// vouchers without the facilitator, each result's `_meta["x402/payment-response"]` carrying the
// channel state the SDK's client hook reads (so it never needs a corrective round trip), the
// corrective result of a payer that lost its record (the PaymentRequired in structuredContent,
// with the channel's state), one claim for every voucher, and the refund of the rest.

const PRICE = BigInt(hashTool.price)
const DEPOSIT = 1_000_000n
const CALLS = 12
let stack: DevStack
let svc: RunningService
let mcp: Client

beforeAll(async () => {
  stack = await sharedDevStack()
  svc = await startService(stack, {
    EVM_RPC_URL: stack.evm.rpcUrl,
    BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
    BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
  })
  mcp = new Client({ name: 'mcp-channels-e2e', version: '1.0.0' })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`)))
}, 180_000)
afterAll(async () => {
  await mcp?.close()
  await svc?.stop()
})

const payerKey = () => stack.evm.payers[2]?.privateKey as `0x${string}`
const payer = () => stack.evm.payers[2]?.address as `0x${string}`

/** The payer's x402 client with the batch-settlement scheme alone, its records in memory. */
function voucherClient() {
  const reader = createPublicClient({ transport: http(stack.evm.rpcUrl) })
  const storage = new InMemoryClientChannelStorage()
  const scheme = new BatchSettlementEvmScheme(
    toClientEvmSigner(privateKeyToAccount(payerKey()), reader),
    { storage },
  )
  return { scheme, storage, client: new x402Client().register('eip155:8453', scheme) }
}

const call = (input: string, payment?: PaymentPayload) =>
  mcp.callTool({
    name: 'payload_hash',
    arguments: { input },
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  }) as Promise<CallToolResult>

const responseOf = (result: CallToolResult) =>
  result._meta?.['x402/payment-response'] as SettleResponse | undefined
const failureCode = (result: CallToolResult) =>
  (result._meta?.['payload-tools/failure'] as { code?: string } | undefined)?.code

/**
 * One paid call as an MCP x402 client makes it: the unpaid call's PaymentRequired, a payload
 * signed by the x402 client, the paid call, then the SDK's response hook with the settlement (or,
 * for a corrective result, the PaymentRequired) and one retry when it recovered.
 */
async function paidCall(x402: x402Client, input: string) {
  const unpaid = await call(input)
  const required = unpaid.structuredContent as PaymentRequired
  const payments: PaymentPayload[] = []
  const results: CallToolResult[] = []
  for (let attempt = 0; attempt < 2; attempt++) {
    const payment = await x402.createPaymentPayload(required)
    payments.push(payment)
    const result = await call(input, payment)
    results.push(result)
    const settleResponse = responseOf(result)
    const recovered = await x402.handlePaymentResponse({
      paymentPayload: payment,
      requirements: payment.accepted,
      ...(result.isError
        ? { paymentRequired: result.structuredContent as PaymentRequired }
        : settleResponse
          ? { settleResponse }
          : {}),
    })
    if (!recovered) break
  }
  return { required, payments, results, last: results.at(-1) as CallToolResult }
}

describe('prepaid channels over MCP', () => {
  let client: x402Client
  let storage: InMemoryClientChannelStorage
  let scheme: BatchSettlementEvmScheme
  let channelId: string
  beforeAll(() => {
    ;({ client, storage, scheme } = voucherClient())
  })

  it('offers batch-settlement beside exact on Base in the PaymentRequired of structuredContent', async () => {
    const unpaid = await call('abc')
    expect(unpaid.isError).toBe(true)
    const required = unpaid.structuredContent as PaymentRequired
    expect(required.accepts.map((a) => [a.scheme, a.network, a.amount])).toEqual([
      ['exact', 'eip155:8453', hashTool.price],
      ['batch-settlement', 'eip155:8453', hashTool.price],
      ['exact', stack.solana.network, hashTool.price],
    ])
    expect(required.accepts[1]?.extra).toMatchObject({ minDeposit: '1000000' })
  })

  it('says so on /capabilities (the schemes of each live rail) and in /llms.txt', async () => {
    const capabilities = (await (await fetch(`${svc.baseUrl}/capabilities`)).json()) as {
      x402: { rails: { network: string; schemes: string[]; min_deposit?: string }[] }
    }
    expect(
      capabilities.x402.rails.map(({ network, schemes, min_deposit }) => ({
        network,
        schemes,
        min_deposit,
      })),
    ).toEqual([
      { network: 'eip155:8453', schemes: ['exact', 'batch-settlement'], min_deposit: '1000000' },
      { network: stack.solana.network, schemes: ['exact'], min_deposit: undefined },
    ])
    const llms = await (await fetch(`${svc.baseUrl}/llms.txt`)).text()
    expect(llms).toContain('## Paying by voucher: prepaid channels on Base')
  })

  it(`takes ${CALLS} calls for one deposit, the rest by voucher without the facilitator, each result carrying the channel state`, async () => {
    const before = {
      payer: await stack.evm.usdcBalance(payer()),
      payTo: await stack.evm.usdcBalance(stack.evm.payTo),
    }
    for (let i = 1; i <= CALLS; i++) {
      const asked = { ...stack.facilitatorRequests }
      const input = `mcp voucher ${i}`
      const { payments, last } = await paidCall(client, input)
      // Never a corrective round trip: the settlement's `extra` kept the client in step.
      expect(payments).toHaveLength(1)
      const payload = payments[0]?.payload as { type: string; voucher: { channelId: string } }
      expect(payload.type).toBe(i === 1 ? 'deposit' : 'voucher')
      channelId = payload.voucher.channelId
      expect(last.isError).toBeUndefined()
      expect(last.structuredContent).toEqual({
        ok: true,
        result: hashTool.run(hashTool.input.parse({ input }), { nowSeconds: () => 0 }),
      })
      const settled = responseOf(last)
      expect(settled).toMatchObject({
        success: true,
        network: 'eip155:8453',
        extra: {
          chargedAmount: hashTool.price,
          channelState: {
            channelId,
            balance: DEPOSIT.toString(),
            chargedCumulativeAmount: (BigInt(i) * PRICE).toString(),
          },
        },
      })
      expect(settled?.transaction).toMatch(i === 1 ? /^0x[0-9a-f]{64}$/ : /^$/)
      if (i > 1) {
        expect(stack.facilitatorRequests).toMatchObject({
          verify: asked.verify,
          settle: asked.settle,
        })
      }
      expect(await storage.get(channelId.toLowerCase())).toMatchObject({
        chargedCumulativeAmount: (BigInt(i) * PRICE).toString(),
        balance: DEPOSIT.toString(),
      })
    }
    expect(await stack.evm.usdcBalance(payer())).toBe(before.payer - DEPOSIT)
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(before.payTo)
  }, 120_000)

  it('answers a payer that lost its record with the corrective PaymentRequired in structuredContent; it resyncs and pays the next voucher', async () => {
    const lost = voucherClient()
    const { results, payments, last } = await paidCall(lost.client, 'after a lost record')
    expect(results).toHaveLength(2)
    const [corrective] = results as [CallToolResult]
    expect(corrective.isError).toBe(true)
    // Its voucher re-signs the deposit call's amount, which the channel has moved past: refused
    // by the channel's check (a deposit is held under its own authorization, not its voucher).
    expect(failureCode(corrective)).toBe('payment_verification_failed')
    const required = corrective.structuredContent as PaymentRequired
    expect(required.error).toBe('invalid_batch_settlement_evm_cumulative_amount_mismatch')
    const offer = required.accepts.find((a) => a.scheme === 'batch-settlement')
    expect(offer?.extra).toMatchObject({
      channelState: { channelId, chargedCumulativeAmount: (BigInt(CALLS) * PRICE).toString() },
      voucherState: { signedMaxClaimable: (BigInt(CALLS) * PRICE).toString() },
    })
    // Rebuilt from the chain (nothing claimed): its first voucher was the deposit call's.
    const cumulative = (p: PaymentPayload | undefined) =>
      (p?.payload as { voucher?: { maxClaimableAmount?: string } } | undefined)?.voucher
        ?.maxClaimableAmount
    expect(payments.map(cumulative)).toEqual([
      PRICE.toString(),
      (BigInt(CALLS + 1) * PRICE).toString(),
    ])
    expect(last.isError).toBeUndefined()
    expect(responseOf(last)?.extra).toMatchObject({
      channelState: { chargedCumulativeAmount: (BigInt(CALLS + 1) * PRICE).toString() },
    })
    // The first client is one voucher behind now; it resyncs the same way on its next call.
    const { results: again } = await paidCall(client, 'the first client again')
    expect(again.map((r) => r.isError ?? false)).toEqual([true, false])
  }, 60_000)

  it('claims every voucher in one claim and settles exactly what was charged to payTo; the refund returns the rest', async () => {
    // Left by an earlier file's refund on this shared stack, if any: not this channel's.
    await settleForPayTo(stack)
    const payTo = await stack.evm.usdcBalance(stack.evm.payTo)
    const payerBefore = await stack.evm.usdcBalance(payer())
    const charged = BigInt(CALLS + 2) * PRICE
    expect(await svc.service.channels?.manager.claimAndSettle()).toEqual({
      claimed: 1,
      settled: true,
    })
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(payTo + charged)
    await scheme.refund(`${svc.baseUrl}/hash`)
    expect(await stack.evm.usdcBalance(payer())).toBe(payerBefore + DEPOSIT - charged)
  }, 60_000)
})
