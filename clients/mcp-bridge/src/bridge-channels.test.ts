import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { CallToolResult } from '@modelcontextprotocol/client'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { privateKeyToAccount } from 'viem/accounts'
import { beforeEach, describe, expect, it } from 'vitest'
import { SETTLEMENT_META_KEY } from './bridge.js'
import {
  CHANNEL_BUSY,
  type ChannelWallet,
  CUMULATIVE_MISMATCH,
  createChannelWallet,
} from './channels.js'
import type { Caps } from './config.js'
import type { RailId } from './rails.js'
import { REFUND_TOOL } from './refund-tool.js'
import { SPEND_TOOL } from './spend-tool.js'
import {
  claimsOf,
  type FakeRemote,
  fakeRemote,
  listedTool,
  settled,
  settledWith,
  signReceipt,
} from './test-support/fake-remote.js'
import {
  BASE,
  baseOffer,
  channelOffer,
  paymentRequired,
  SOL,
  solanaOffer,
  TEST_EVM_KEY,
} from './test-support/offers.js'
import { testBridge } from './test-support/test-bridge.js'

// The bridge paying by voucher: the real channel wallet (the official client scheme, signing
// offline, the escrow a stand-in readContract) over the fake service, which answers channel
// payments as the service does: the channel's state in the SettleResponse's `extra`, a delivery
// receipt binding the channel and the cumulative amount. On the devnet: the service repository's
// test/mcp-bridge-channels.e2e.test.ts.

const tools = () => [listedTool('payload_hash', '1000'), listedTool('payload_pipeline', '3000')]
const DEPOSIT = '1000000'

let remote: FakeRemote
let logs: string[]
let channels: ChannelWallet
/** What the fake service charged on the channel so far (atomic USDC). */
let charged: bigint
let slept: number[]

type Payload = {
  type: string
  voucher: { channelId: string; maxClaimableAmount: string }
  deposit?: { amount: string }
}
const payloadOf = (payment: PaymentPayload) => payment.payload as unknown as Payload

/** The service's answer to a channel payment it takes: result, state in `extra`, receipt. */
async function channelSettled(
  payment: PaymentPayload,
  name: string,
  args: Record<string, unknown> | undefined,
) {
  const { type, voucher } = payloadOf(payment)
  charged = BigInt(voucher.maxClaimableAmount)
  const transaction = type === 'deposit' ? `0x${'d'.repeat(64)}` : ''
  const result = { echoed: true }
  const claims = {
    ...claimsOf(payment, name, args, result),
    transaction: transaction || undefined,
    amount: payment.accepted.amount,
    channel: voucher.channelId.toLowerCase(),
    cumulative: voucher.maxClaimableAmount,
  }
  const answer = settledWith(payment, result, await signReceipt(claims))
  answer._meta['x402/payment-response'] = {
    ...answer._meta['x402/payment-response'],
    transaction,
    extra: {
      chargedAmount: payment.accepted.amount,
      channelState: {
        channelId: voucher.channelId,
        balance: DEPOSIT,
        totalClaimed: '0',
        withdrawRequestedAt: 0,
        refundNonce: '0',
        chargedCumulativeAmount: voucher.maxClaimableAmount,
      },
    },
  }
  return answer
}

/** The service's refusal of a channel payment: the PaymentRequired, its reason in `error`. */
function refusal(required: PaymentRequired, code: string): CallToolResult {
  const envelope = { ok: false, error: `refused: ${required.error}`, code }
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify(required) }],
    structuredContent: required as unknown as Record<string, unknown>,
    _meta: { 'payload-tools/failure': envelope },
  }
}

const bridgeWith = (caps: Partial<Caps> = {}, preferredRail?: RailId, wallet = channels) =>
  testBridge({
    remote,
    caps,
    preferredRail,
    over: {
      channels: wallet,
      serviceUrl: 'https://tools.example',
      settlementRetry: {
        sleep: async (ms) => {
          slept.push(ms)
        },
      },
    },
    log: (m) => logs.push(m),
  })

beforeEach(() => {
  remote = fakeRemote(tools())
  for (const [name, price] of [
    ['payload_hash', '1000'],
    ['payload_pipeline', '3000'],
  ] as const) {
    remote.accepts.set(name, [baseOffer(price), channelOffer(price), solanaOffer(price)])
  }
  remote.paidAnswer = (payment, name, args) =>
    payment.accepted.scheme === 'batch-settlement'
      ? channelSettled(payment, name, args)
      : settled(payment, name, args)
  logs = []
  charged = 0n
  slept = []
  channels = createChannelWallet({
    evmPrivateKey: TEST_EVM_KEY,
    rpcUrl: 'http://127.0.0.1:1',
    directory: mkdtempSync(join(tmpdir(), 'bridge-ch-')),
    serviceUrl: 'https://tools.example',
    depositCap: 1_000_000n,
    perCallCap: 10_000n,
    reader: { readContract: async () => [0n, 0n] },
  })
})

const failure = (result: CallToolResult) =>
  result.structuredContent as { ok: boolean; code: string; error: string }
const kinds = () => remote.payments.map((p) => `${p.accepted.scheme}:${payloadOf(p).type ?? ''}`)

describe('a service that offers prepaid channels', () => {
  it('gets one deposit, then vouchers; the caps count the prices, never the deposit', async () => {
    const { bridge, ledger } = await bridgeWith()
    const first = await bridge.callTool('payload_hash', { input: 'a' })
    const second = await bridge.callTool('payload_pipeline', { input: 'b' })
    const third = await bridge.callTool('payload_hash', { input: 'c' })
    expect([first, second, third].map((r) => r.isError)).toEqual([undefined, undefined, undefined])
    expect(kinds()).toEqual([
      'batch-settlement:deposit',
      'batch-settlement:voucher',
      'batch-settlement:voucher',
    ])
    expect(remote.payments.map((p) => payloadOf(p).voucher.maxClaimableAmount)).toEqual([
      '1000',
      '4000',
      '5000',
    ])
    expect(payloadOf(remote.payments[0] as PaymentPayload).deposit?.amount).toBe(DEPOSIT)
    expect(ledger.snapshot()).toMatchObject({ session: { [BASE]: 5000n }, calls: 3 })
    const id = payloadOf(remote.payments[0] as PaymentPayload).voucher.channelId.toLowerCase()
    const short = `${id.slice(0, 6)}…${id.slice(-4)}`
    expect(first.content?.at(-1)).toEqual({
      type: 'text',
      text: `Paid 0.001 USDC on Base (eip155:8453) from prepaid channel ${short} (0.001 of its 1 USDC charged, 0.999 left), after a deposit of 1 USDC into it, transaction 0x${'d'.repeat(64)}.`,
    })
    expect(third.content?.at(-1)).toEqual({
      type: 'text',
      text: `Paid 0.001 USDC on Base (eip155:8453) by voucher from prepaid channel ${short} (0.005 of its 1 USDC charged, 0.995 left); no transaction of its own (the service claims vouchers in batches).`,
    })
    expect(third._meta?.[SETTLEMENT_META_KEY]).toEqual({
      network: BASE,
      transaction: '',
      amount: '1000',
      display: '0.001 USDC',
      scheme: 'batch-settlement',
      channel: { id, balance: '1', charged: '0.005', remaining: '0.995' },
    })
    expect(logs.filter((l) => l.startsWith('signed payment for'))).toEqual([
      `signed payment for payload_hash on ${BASE} (0.001 USDC, with a deposit of 1 USDC into channel ${short})`,
      `signed payment for payload_pipeline on ${BASE} (0.003 USDC, by voucher on channel ${short})`,
      `signed payment for payload_hash on ${BASE} (0.001 USDC, by voucher on channel ${short})`,
    ])
  })

  it('shows the open channel in the spend tool, and lists the refund tool', async () => {
    const { bridge } = await bridgeWith()
    const before = await bridge.callTool(SPEND_TOOL, {})
    expect(before.structuredContent).toMatchObject({
      channel: { scheme: 'batch-settlement', max_deposit: '1', open: null },
    })
    await bridge.callTool('payload_hash', { input: 'a' })
    await bridge.callTool('payload_pipeline', { input: 'b' })
    const id = payloadOf(remote.payments[0] as PaymentPayload).voucher.channelId.toLowerCase()
    const short = `${id.slice(0, 6)}…${id.slice(-4)}`
    const after = await bridge.callTool(SPEND_TOOL, {})
    expect(after.structuredContent).toMatchObject({
      session: { total: '0.004', calls: 2 },
      channel: {
        scheme: 'batch-settlement',
        max_deposit: '1',
        open: { network: BASE, id: short, balance: '1', charged: '0.004', remaining: '0.996' },
      },
    })
    expect((after.content?.[0] as { text?: string } | undefined)?.text).toContain(
      `Prepaid channel ${short} on Base: 0.004 of its 1 USDC deposit charged, 0.996 left (payload_tools_refund gets it back).`,
    )
    const { tools: listed } = await bridge.listTools()
    expect(listed.map((t) => t.name)).toEqual([
      'payload_hash',
      'payload_pipeline',
      SPEND_TOOL,
      REFUND_TOOL,
    ])
  })

  it('pays exact when the deposit a channel needs passes MAX_USDC_DEPOSIT, and says why in the log', async () => {
    remote.accepts.set('payload_hash', [
      baseOffer('1000'),
      channelOffer('1000', { minDeposit: '5000000' }),
    ])
    const { bridge, ledger } = await bridgeWith()
    const result = await bridge.callTool('payload_hash', { input: 'a' })
    expect(result.isError).toBeUndefined()
    expect(kinds()).toEqual(['exact:'])
    expect(logs).toContain(
      "payload_hash: paying with exact: a channel needs a deposit of 5 USDC (the service's minDeposit), above MAX_USDC_DEPOSIT (1 USDC)",
    )
    expect(ledger.snapshot().session).toEqual({ [BASE]: 1000n })
  })

  it('pays Solana exact when PAYER_RAIL says solana; exact alone without a channel wallet', async () => {
    // A wallet with keys on both rails (its Solana signature is a stand-in: it needs an RPC).
    const wallet = {
      rails: ['base', 'solana'] as RailId[],
      sign: async (required: PaymentRequired, offer: PaymentRequired['accepts'][number]) => ({
        x402Version: 2,
        resource: required.resource,
        accepted: offer,
        payload: { transaction: 'stand-in' },
      }),
    }
    const { bridge: solana } = await testBridge({
      remote,
      preferredRail: 'solana',
      over: { channels, serviceUrl: 'https://tools.example', wallet },
      log: () => {},
    })
    await solana.callTool('payload_hash', {})
    expect(remote.payments.map((p) => [p.accepted.scheme, p.accepted.network])).toEqual([
      ['exact', SOL],
    ])
    const plain = await testBridge({ remote, log: () => {} })
    await plain.bridge.callTool('payload_hash', {})
    expect(remote.payments.map((p) => [p.accepted.scheme, p.accepted.network])).toEqual([
      ['exact', SOL],
      ['exact', BASE],
    ])
    expect((await plain.bridge.listTools()).tools.map((t) => t.name)).not.toContain(REFUND_TOOL)
  })

  it('resyncs from the corrective PaymentRequired and signs again, counted once', async () => {
    const { bridge, ledger } = await bridgeWith()
    await bridge.callTool('payload_hash', { input: 'a' })
    const id = payloadOf(remote.payments[0] as PaymentPayload).voucher.channelId as `0x${string}`
    // Another process of this payer paid 4000 more meanwhile: its last voucher is the proof.
    const proof = await signVoucher(
      toClientEvmSigner(privateKeyToAccount(TEST_EVM_KEY)),
      id,
      '5000',
      BASE,
    )
    const honest = remote.paidAnswer
    remote.paidAnswer = async (payment, name, args) => {
      if (payloadOf(payment).voucher.maxClaimableAmount === '6000') {
        return honest(payment, name, args)
      }
      return refusal(
        {
          ...paymentRequired([
            channelOffer('1000', {
              channelState: {
                channelId: id,
                balance: DEPOSIT,
                totalClaimed: '0',
                withdrawRequestedAt: 0,
                refundNonce: '0',
                chargedCumulativeAmount: '5000',
              },
              voucherState: { signedMaxClaimable: '5000', signature: proof.signature },
            }),
          ]),
          error: CUMULATIVE_MISMATCH,
        },
        'payment_verification_failed',
      )
    }
    const result = await bridge.callTool('payload_hash', { input: 'b' })
    expect(result.isError).toBeUndefined()
    expect(remote.payments.slice(1).map((p) => payloadOf(p).voucher.maxClaimableAmount)).toEqual([
      '2000',
      '6000',
    ])
    expect(ledger.snapshot()).toMatchObject({ session: { [BASE]: 2000n }, calls: 2 })
    expect(logs).toContain(
      "paid call of payload_hash: the channel's record was resynced from the service; signing again (1 of 2), nothing was charged",
    )
  })

  it('waits and signs again when the channel is busy; gives up, not counted, after two', async () => {
    const { bridge, ledger } = await bridgeWith()
    await bridge.callTool('payload_hash', { input: 'a' })
    const honest = remote.paidAnswer
    let busy = 1
    const busyAnswer = () =>
      refusal(
        { ...paymentRequired([channelOffer()]), error: CHANNEL_BUSY },
        'payment_verification_failed',
      )
    remote.paidAnswer = async (payment, name, args) =>
      busy-- > 0 ? busyAnswer() : honest(payment, name, args)
    expect((await bridge.callTool('payload_hash', { input: 'b' })).isError).toBeUndefined()
    expect(slept).toEqual([1000])
    busy = 5
    const refused = await bridge.callTool('payload_hash', { input: 'c' })
    expect(refused.isError).toBe(true)
    expect(refused._meta?.['payload-tools/failure']).toMatchObject({
      code: 'payment_verification_failed',
    })
    expect((refused.structuredContent as PaymentRequired).error).toBe(CHANNEL_BUSY)
    expect(slept).toEqual([1000, 1000, 1000])
    expect(ledger.snapshot()).toMatchObject({ session: { [BASE]: 2000n }, calls: 2 })
  })

  it('never sends two vouchers on the channel at once', async () => {
    const { bridge } = await bridgeWith()
    let inFlight = 0
    let most = 0
    const honest = remote.paidAnswer
    remote.paidAnswer = async (payment, name, args) => {
      inFlight += 1
      most = Math.max(most, inFlight)
      await new Promise((done) => setTimeout(done, 5))
      inFlight -= 1
      return honest(payment, name, args)
    }
    const results = await Promise.all(
      ['a', 'b', 'c', 'd'].map((input) => bridge.callTool('payload_hash', { input })),
    )
    expect(results.map((r) => r.isError)).toEqual([undefined, undefined, undefined, undefined])
    expect(most).toBe(1)
    expect(remote.payments.map((p) => payloadOf(p).voucher.maxClaimableAmount)).toEqual([
      '1000',
      '2000',
      '3000',
      '4000',
    ])
    expect(charged).toBe(4000n)
  })

  it('withholds a result whose receipt names another channel amount', async () => {
    const { bridge, ledger } = await bridgeWith()
    await bridge.callTool('payload_hash', { input: 'a' })
    remote.paidAnswer = async (payment, name, args) => {
      const answer = await channelSettled(payment, name, args)
      const claims = {
        ...claimsOf(payment, name, args, { echoed: true }),
        transaction: undefined,
        channel: payloadOf(payment).voucher.channelId.toLowerCase(),
        cumulative: '999999',
      }
      const settlement = answer._meta['x402/payment-response'] as Record<string, unknown>
      settlement.extensions = {
        'delivery-receipt': { info: { receipt: await signReceipt(claims) } },
      }
      return answer
    }
    const result = await bridge.callTool('payload_hash', { input: 'b' })
    expect(failure(result)).toMatchObject({ code: 'receipt_mismatch', mismatched: ['cumulative'] })
    expect(failure(result).error).toMatch(/\(voucher on channel 0x[0-9a-f]{4}…[0-9a-f]{4}\)/)
    expect(ledger.snapshot().session).toEqual({ [BASE]: 2000n })
  })
})
