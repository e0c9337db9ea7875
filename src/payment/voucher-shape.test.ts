import type { PaymentRequirements } from '@x402/core/types'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { describe, expect, it } from 'vitest'
import { type ChannelPayload, channelPayloadShape, checkChannelPayload } from './voucher-shape.js'

// The checks a channel payload passes before any SDK function or the facilitator sees it. The
// channel ids are the SDK's own `computeChannelId` (the oracle of the specification's hash).

const NOW = 1_800_000_000
const PAY_TO = '0x209693Bc6afc0C5328bA36FaF03C514EF312287C'
const USDC = '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913'
const AUTHORIZER = '0x90F79bf6EB2c4f870365E785982E1f101E93b906'
const PAYER = '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC'
const matched: PaymentRequirements = {
  scheme: 'batch-settlement',
  network: 'eip155:8453',
  amount: '1000',
  asset: USDC,
  payTo: PAY_TO,
  maxTimeoutSeconds: 120,
  extra: {
    name: 'USD Coin',
    version: '2',
    receiverAuthorizer: AUTHORIZER,
    withdrawDelay: 900,
    minDeposit: '1000000',
  },
}
type Config = Record<
  'payer' | 'payerAuthorizer' | 'receiver' | 'receiverAuthorizer' | 'token' | 'salt',
  `0x${string}`
> & {
  withdrawDelay: number
}
const config: Config = {
  payer: PAYER,
  payerAuthorizer: PAYER,
  receiver: PAY_TO,
  receiverAuthorizer: AUTHORIZER,
  token: USDC,
  withdrawDelay: 900,
  salt: `0x${'00'.repeat(31)}01`,
}
const signature = `0x${'ab'.repeat(65)}` as const
const channelId = computeChannelId(config, 'eip155:8453')

function voucher(over: Partial<Config> = {}, amount = '3000'): ChannelPayload {
  const channelConfig = { ...config, ...over }
  return {
    type: 'voucher',
    channelConfig,
    voucher: { channelId, maxClaimableAmount: amount, signature },
  }
}

function deposit(amount: string, validBefore: number, validAfter = 0): ChannelPayload {
  return {
    type: 'deposit',
    channelConfig: config,
    voucher: { channelId, maxClaimableAmount: '1000', signature },
    deposit: {
      amount,
      authorization: {
        erc3009Authorization: {
          validAfter: String(validAfter),
          validBefore: String(validBefore),
          salt: `0x${'22'.repeat(32)}`,
          signature,
        },
      },
    },
  }
}

const check = (payload: ChannelPayload, refund = false) =>
  checkChannelPayload(payload, matched, NOW, 60, { refund })

describe('channel payloads', () => {
  it('takes a voucher on our channel: presentable for the offer window plus skew', () => {
    expect(check(voucher())).toEqual({ validUntil: NOW + 120 + 60 })
  })

  it.each([
    ['receiver', { receiver: PAYER }, 'channelConfig.receiver is not the offered payTo'],
    ['token', { token: PAYER }, 'channelConfig.token is not the offered asset'],
    [
      'receiver-authorizer',
      { receiverAuthorizer: PAYER },
      'channelConfig.receiverAuthorizer is not the offered receiverAuthorizer',
    ],
    [
      'withdraw delay',
      { withdrawDelay: 901 },
      'channelConfig.withdrawDelay is not the offered withdrawDelay',
    ],
    [
      'salt (another channel)',
      { salt: `0x${'00'.repeat(31)}02` },
      "voucher.channelId is not the channel config's id on this network",
    ],
  ] as const)('refuses a voucher whose %s is not ours', (_, over, problem) => {
    expect(check(voucher(over))).toEqual({ problem })
  })

  it('takes a deposit of at least minDeposit valid for the offer, presentable until its validBefore', () => {
    expect(check(deposit('1000000', NOW + 100))).toEqual({ validUntil: NOW + 100 })
  })

  it('takes a top-up whose voucher also spends what the channel holds (more than the deposit)', () => {
    const topUp = deposit('1000000', NOW + 100)
    topUp.voucher.maxClaimableAmount = '1001000'
    expect(check(topUp)).toEqual({ validUntil: NOW + 100 })
  })

  it.each([
    [deposit('999999', NOW + 100), 'deposit.amount is below the offered minDeposit "1000000"'],
    [deposit('1000000', NOW), 'the deposit authorization has expired (validBefore)'],
    [
      deposit('1000000', NOW + 181),
      'the deposit authorization is valid for 181 s; the offer allows at most 120 s (maxTimeoutSeconds)',
    ],
    [
      deposit('1000000', NOW + 100, NOW + 61),
      'the deposit authorization is not valid yet (validAfter)',
    ],
  ])('refuses a deposit out of the offer (%#)', (payload, problem) => {
    expect(check(payload)).toEqual({ problem })
  })

  it('takes a refund only in the refund flow, and nothing else there', () => {
    const refund: ChannelPayload = { ...voucher(), type: 'refund' } as ChannelPayload
    expect(check(refund)).toEqual({
      problem: 'a refund is asked with GET on the tool URL (the refund flow), not with a call',
    })
    expect(check(refund, true)).toEqual({ validUntil: NOW + 180 })
    expect(check(voucher(), true)).toEqual({
      problem: 'only a refund is accepted with GET; a call is a POST',
    })
  })

  it("never takes the facilitator's own payloads from a payer (claim, settle)", () => {
    expect(channelPayloadShape.safeParse({ type: 'claim', claims: [] }).success).toBe(false)
    expect(
      channelPayloadShape.safeParse({ type: 'settle', receiver: PAY_TO, token: USDC }).success,
    ).toBe(false)
  })
})
