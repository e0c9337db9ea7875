import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PaymentPayload, SettleResponse } from '@x402/core/types'
import { toClientEvmSigner } from '@x402/evm'
import { signVoucher } from '@x402/evm/batch-settlement/client'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import {
  CHANNEL_BUSY,
  type ChannelOptions,
  CUMULATIVE_MISMATCH,
  createChannelWallet,
  DepositCapError,
  shortChannel,
} from './channels.js'
import {
  BASE,
  baseOffer,
  channelOffer,
  paymentRequired,
  solanaOffer,
  TEST_EVM_KEY,
} from './test-support/offers.js'

// The bridge's prepaid channels over the official client scheme, signing offline; the escrow is
// a stand-in `readContract` (balance, totalClaimed). On the devnet with the real escrow:
// test/mcp-bridge-channels.e2e.test.ts of the service repository.

/** A channel wallet in a fresh state directory; `chain` is what the escrow answers. */
function wallet(over: Partial<ChannelOptions> = {}, dir = mkdtempSync(join(tmpdir(), 'ch-'))) {
  const chain = { balance: 0n, totalClaimed: 0n, reads: 0 }
  const channels = createChannelWallet({
    evmPrivateKey: TEST_EVM_KEY,
    rpcUrl: 'http://127.0.0.1:1',
    directory: dir,
    serviceUrl: 'https://tools.example',
    depositCap: 1_000_000n,
    perCallCap: 10_000n,
    reader: {
      async readContract() {
        chain.reads += 1
        return [chain.balance, chain.totalClaimed]
      },
    },
    ...over,
  })
  return { channels, chain, dir }
}

type Payload = {
  type: string
  voucher: { channelId: string; maxClaimableAmount: string }
  deposit?: { amount: string }
}
const payloadOf = (payment: PaymentPayload) => payment.payload as unknown as Payload

/** The service's answer to a settled channel payment: its state in `extra`. */
const settlement = (payment: PaymentPayload, balance: string): SettleResponse => ({
  success: true,
  transaction: payloadOf(payment).type === 'deposit' ? `0x${'d'.repeat(64)}` : '',
  network: BASE,
  extra: {
    chargedAmount: payment.accepted.amount,
    channelState: {
      channelId: payloadOf(payment).voucher.channelId,
      balance,
      totalClaimed: '0',
      withdrawRequestedAt: 0,
      refundNonce: '0',
      chargedCumulativeAmount: payloadOf(payment).voucher.maxClaimableAmount,
    },
  },
})

describe('choose', () => {
  const { channels } = wallet()

  it('takes the batch-settlement USDC offer on Base, with the deposit a channel needs', () => {
    const offer = channelOffer()
    expect(channels.choose([baseOffer(), offer, solanaOffer()])).toEqual({
      offer,
      deposit: 1_000_000n,
    })
    expect(channels.choose([baseOffer(), solanaOffer()])).toBeUndefined()
    expect(
      channels.choose([channelOffer('1000', {}, { asset: `0x${'1'.repeat(40)}` })]),
    ).toBeUndefined()
  })

  it('says why not when the deposit would pass MAX_USDC_DEPOSIT, or the offer lacks its authorizer', () => {
    expect(channels.choose([channelOffer('1000', { minDeposit: '2000000' })])).toEqual({
      reason:
        "a channel needs a deposit of 2 USDC (the service's minDeposit), above MAX_USDC_DEPOSIT (1 USDC)",
    })
    expect(channels.choose([channelOffer('1000', { receiverAuthorizer: undefined })])).toEqual({
      reason: 'its channel offer names no receiverAuthorizer',
    })
    // Without minDeposit the SDK deposits 5 × the price.
    expect(channels.choose([channelOffer('1000', { minDeposit: undefined })])).toMatchObject({
      deposit: 5000n,
    })
  })
})

describe('a channel', () => {
  it('deposits the minimum with the first voucher, then signs vouchers on the cumulative amount', async () => {
    const { channels, dir } = wallet()
    const required = paymentRequired([channelOffer()])
    const first = await channels.sign(required, channelOffer())
    expect(payloadOf(first)).toMatchObject({
      type: 'deposit',
      deposit: { amount: '1000000' },
      voucher: { maxClaimableAmount: '1000' },
    })
    const id = payloadOf(first).voucher.channelId
    expect(await channels.settled(first, settlement(first, '1000000'))).toEqual({
      network: BASE,
      id: id.toLowerCase(),
      balance: 1_000_000n,
      charged: 1000n,
    })
    const second = await channels.sign(required, channelOffer())
    expect(payloadOf(second)).toMatchObject({
      type: 'voucher',
      voucher: { channelId: id, maxClaimableAmount: '2000' },
    })
    await channels.settled(second, settlement(second, '1000000'))
    // Kept in the state directory: the SDK's record and open.json naming it for the service.
    expect(readdirSync(join(dir, 'client'))).toEqual([`${id.toLowerCase()}.json`])
    expect(JSON.parse(readFileSync(join(dir, 'open.json'), 'utf8'))).toEqual({
      version: 1,
      channels: { 'https://tools.example': { network: BASE, channel: id.toLowerCase() } },
    })
    // Another process (a later session) names the channel without reading the chain.
    const later = wallet({}, dir)
    expect(await later.channels.open()).toMatchObject({ charged: 2000n, balance: 1_000_000n })
    expect(later.chain.reads).toBe(0)
  })

  it('refuses to sign a deposit above MAX_USDC_DEPOSIT, and a price above MAX_USDC_PER_CALL', async () => {
    const { channels } = wallet({ depositCap: 500_000n })
    const offer = channelOffer()
    await expect(channels.sign(paymentRequired([offer]), offer)).rejects.toThrow(
      new DepositCapError(
        'the channel needs a deposit of 1 USDC, above MAX_USDC_DEPOSIT (0.5 USDC)',
      ),
    )
    const dear = channelOffer('20000')
    await expect(channels.sign(paymentRequired([dear]), dear)).rejects.toThrow(
      'the price is above MAX_USDC_PER_CALL (0.01)',
    )
  })

  it('drops a record the escrow contradicts (an idle refund) and deposits again', async () => {
    const { channels, dir } = wallet()
    const offer = channelOffer()
    const first = await channels.sign(paymentRequired([offer]), offer)
    await channels.settled(first, settlement(first, '1000000'))
    // A new process; meanwhile the service refunded the idle channel: 1000 claimed, the rest back.
    const next = wallet({}, dir)
    next.chain.balance = 1000n
    next.chain.totalClaimed = 1000n
    const again = await next.channels.sign(paymentRequired([offer]), offer)
    expect(payloadOf(again)).toMatchObject({
      type: 'deposit',
      deposit: { amount: '1000000' },
      voucher: { maxClaimableAmount: '2000' },
    })
  })

  it('reads the escrow again after a refusal its record cannot explain (refunded while running)', async () => {
    const { channels, chain } = wallet()
    const offer = channelOffer()
    const first = await channels.sign(paymentRequired([offer]), offer)
    await channels.settled(first, settlement(first, '1000000'))
    chain.balance = 1_000_000n
    const second = await channels.sign(paymentRequired([offer]), offer)
    expect(payloadOf(second).type).toBe('voucher')
    // The service refunded the idle channel meanwhile: 1000 claimed, the rest back to the payer.
    chain.balance = 1000n
    chain.totalClaimed = 1000n
    const refusal = {
      ...paymentRequired([offer]),
      error: 'invalid_batch_settlement_evm_cumulative_exceeds_balance',
    }
    expect(await channels.refused(second, refusal)).toBeUndefined()
    const again = await channels.sign(paymentRequired([offer]), offer)
    expect(payloadOf(again)).toMatchObject({ type: 'deposit', deposit: { amount: '1000000' } })
  })

  it('resyncs from a corrective PaymentRequired signed by this payer, and says busy', async () => {
    const { channels, chain } = wallet()
    const offer = channelOffer()
    const first = await channels.sign(paymentRequired([offer]), offer)
    await channels.settled(first, settlement(first, '1000000'))
    const id = payloadOf(first).voucher.channelId as `0x${string}`
    chain.balance = 1_000_000n
    // The service charged 5000 (another process of this payer): its last voucher, the proof.
    const proof = await signVoucher(
      toClientEvmSigner(privateKeyToAccount(TEST_EVM_KEY)),
      id,
      '5000',
      BASE,
    )
    const corrective = {
      ...paymentRequired([
        channelOffer('1000', {
          channelState: {
            channelId: id,
            balance: '1000000',
            totalClaimed: '0',
            withdrawRequestedAt: 0,
            refundNonce: '0',
            chargedCumulativeAmount: '5000',
          },
          voucherState: { signedMaxClaimable: '5000', signature: proof.signature },
        }),
      ]),
      error: CUMULATIVE_MISMATCH,
    }
    const stale = await channels.sign(paymentRequired([offer]), offer)
    expect(payloadOf(stale).voucher.maxClaimableAmount).toBe('2000')
    expect(await channels.refused(stale, corrective)).toBe('resync')
    const fresh = await channels.sign(paymentRequired([offer]), offer)
    expect(payloadOf(fresh).voucher.maxClaimableAmount).toBe('6000')
    expect(await channels.refused(fresh, { ...corrective, error: CHANNEL_BUSY })).toBe('busy')
    expect(
      await channels.refused(fresh, { ...corrective, error: 'duplicate_settlement' }),
    ).toBeUndefined()
  })

  it('will not resync from a proof another key signed', async () => {
    const { channels, chain } = wallet()
    const offer = channelOffer()
    const first = await channels.sign(paymentRequired([offer]), offer)
    await channels.settled(first, settlement(first, '1000000'))
    const id = payloadOf(first).voucher.channelId as `0x${string}`
    chain.balance = 1_000_000n
    const forged = await signVoucher(
      toClientEvmSigner(privateKeyToAccount(`0x${'7'.repeat(64)}`)),
      id,
      '900000',
      BASE,
    )
    const corrective = {
      ...paymentRequired([
        channelOffer('1000', {
          channelState: {
            channelId: id,
            balance: '1000000',
            totalClaimed: '0',
            withdrawRequestedAt: 0,
            refundNonce: '0',
            chargedCumulativeAmount: '900000',
          },
          voucherState: { signedMaxClaimable: '900000', signature: forged.signature },
        }),
      ]),
      error: CUMULATIVE_MISMATCH,
    }
    const next = await channels.sign(paymentRequired([offer]), offer)
    expect(await channels.refused(next, corrective)).toBeUndefined()
    expect(await channels.open()).toMatchObject({ charged: 1000n })
  })

  it('runs paid calls one at a time', async () => {
    const { channels } = wallet()
    const order: string[] = []
    const slow = (name: string, ms: number) =>
      channels.exclusive(async () => {
        order.push(`${name} start`)
        await new Promise((done) => setTimeout(done, ms))
        order.push(`${name} end`)
        if (name === 'b') throw new Error('b failed')
        return name
      })
    const results = await Promise.allSettled([slow('a', 30), slow('b', 1), slow('c', 1)])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    expect(order).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end'])
  })

  it('shortens a channel id for people', () => {
    expect(shortChannel(`0x5a1c${'0'.repeat(56)}e93b`)).toBe('0x5a1c…e93b')
  })
})
