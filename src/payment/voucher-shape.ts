import type { PaymentRequirements } from '@x402/core/types'
import { computeChannelId } from '@x402/evm/batch-settlement/client'
import { z } from 'zod'

/** The x402 scheme of prepaid channels: deposits and cumulative vouchers (src/channels/). */
export const BATCH_SETTLEMENT = 'batch-settlement'

/**
 * The SDK's reason when a channel's state could not be read or reserved (its store is down): a
 * fault of ours, answered 503, never a refusal of the payment.
 */
export const CHANNEL_STATE_UNAVAILABLE =
  'invalid_batch_settlement_evm_verification_state_unavailable'

/**
 * The SDK's reason when a voucher's cumulative amount is not the channel's charged amount plus the
 * price: the PaymentRequired then carries the channel's state, and the SDK's client resyncs from
 * it and signs again (its `processCorrectivePaymentRequired` acts on this reason only).
 */
export const CUMULATIVE_MISMATCH = 'invalid_batch_settlement_evm_cumulative_amount_mismatch'

/**
 * Members a corrective 402 of `batch-settlement` adds to the `extra` it offered (the SDK's
 * `channelState`, `voucherState`): a payer that resyncs from one echoes them in `accepted`, so they
 * are not compared with the offer (the channel's state is the server's, never the payer's word).
 */
export const CORRECTIVE_EXTRA: ReadonlySet<string> = new Set(['channelState', 'voucherState'])

const digits = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,38})$/, 'expected an unsigned integer in decimal digits')
const hex = (bytes: number) =>
  z
    .templateLiteral(['0x', z.string()])
    .refine(
      (v) => new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`).test(v),
      `expected 0x and ${bytes} bytes in hex`,
    )
const signature = z
  .templateLiteral(['0x', z.string()])
  .refine(
    (v) => /^0x(?:[0-9a-fA-F]{2}){65,4096}$/.test(v),
    'expected 0x and a hex signature of 65 bytes or more',
  )

/** The `ChannelConfig` of the x402 batch-settlement EVM specification. */
const channelConfigShape = z.strictObject({
  payer: hex(20),
  payerAuthorizer: hex(20),
  receiver: hex(20),
  receiverAuthorizer: hex(20),
  token: hex(20),
  withdrawDelay: z
    .number()
    .int()
    .min(0)
    .max(2 ** 40 - 1),
  salt: hex(32),
})

/** A cumulative voucher: the payer's signature over `(channelId, maxClaimableAmount)`. */
const voucherShape = z.strictObject({
  channelId: hex(32),
  maxClaimableAmount: digits,
  signature,
})

/**
 * The payloads a payer may present (x402 `batch-settlement` EVM): a deposit with its first voucher
 * (an ERC-3009 `receiveWithAuthorization` to the deposit collector; Permit2 deposits are not
 * offered), a voucher, or a refund request. The facilitator's own payloads (claim, settle, an
 * enriched refund) are never accepted from a payer.
 */
export const channelPayloadShape = z.discriminatedUnion('type', [
  z.strictObject({
    type: z.literal('deposit'),
    channelConfig: channelConfigShape,
    voucher: voucherShape,
    deposit: z.strictObject({
      amount: digits,
      authorization: z.strictObject({
        erc3009Authorization: z.strictObject({
          validAfter: digits,
          validBefore: digits,
          salt: hex(32),
          signature,
        }),
      }),
    }),
  }),
  z.strictObject({
    type: z.literal('voucher'),
    channelConfig: channelConfigShape,
    voucher: voucherShape,
  }),
  z.strictObject({
    type: z.literal('refund'),
    channelConfig: channelConfigShape,
    voucher: voucherShape,
    amount: digits.optional(),
  }),
])

/** Channel ids computed, kept: a payer presents the same config with every voucher. */
const channelIds = new Map<string, string>()
/** Configs whose ids are kept at most (the oldest is forgotten first). */
const CHANNEL_IDS_KEPT = 4096

/**
 * The channel id of a config on a network (lower-case hex), the SDK's `computeChannelId` (the
 * specification's EIP-712 hash, a keccak in JavaScript), computed once per config and network.
 */
function channelIdOf(config: ChannelPayload['channelConfig'], network: string): string {
  const key =
    `${network}|${config.payer}|${config.payerAuthorizer}|${config.receiver}|${config.receiverAuthorizer}|${config.token}|${config.withdrawDelay}|${config.salt}`.toLowerCase()
  let id = channelIds.get(key)
  if (id === undefined) {
    id = computeChannelId(config, network).toLowerCase()
    if (channelIds.size >= CHANNEL_IDS_KEPT)
      channelIds.delete(channelIds.keys().next().value as string)
    channelIds.set(key, id)
  }
  return id
}

/** A `batch-settlement` payload that passed {@link channelPayloadShape}. */
export type ChannelPayload = z.infer<typeof channelPayloadShape>

/**
 * What a channel payload must say for the requirements it matched, before any SDK function or the
 * facilitator is asked: a channel to our payTo, in our token, with our receiver-authorizer and
 * withdraw delay, whose id is the specification's hash of its config on this network; a deposit of
 * at least the offered `minDeposit` whose authorization is valid now and for no longer than the
 * offer allows. A refund only where `refund` allows it (the refund flow, on GET).
 *
 * @param nowSeconds - our clock, in Unix seconds
 * @param skewSeconds - how far a payer's clock may run ahead of ours, in seconds
 * @returns until when the payment can be presented (Unix seconds), or why it is refused
 * @example checkChannelPayload(payload, matched, now, 60, { refund: false }) // { validUntil }
 */
export function checkChannelPayload(
  payload: ChannelPayload,
  matched: PaymentRequirements,
  nowSeconds: number,
  skewSeconds: number,
  allow: { refund: boolean },
): { validUntil: number } | { problem: string } {
  const longest = nowSeconds + matched.maxTimeoutSeconds + skewSeconds
  if (payload.type === 'refund' && !allow.refund) {
    return {
      problem: 'a refund is asked with GET on the tool URL (the refund flow), not with a call',
    }
  }
  if (payload.type !== 'refund' && allow.refund) {
    return { problem: 'only a refund is accepted with GET; a call is a POST' }
  }
  const config = payload.channelConfig
  const extra = matched.extra ?? {}
  const same = (a: string, b: unknown) =>
    typeof b === 'string' && a.toLowerCase() === b.toLowerCase()
  if (!same(config.receiver, matched.payTo))
    return { problem: 'channelConfig.receiver is not the offered payTo' }
  if (!same(config.token, matched.asset))
    return { problem: 'channelConfig.token is not the offered asset' }
  if (!same(config.receiverAuthorizer, extra.receiverAuthorizer)) {
    return { problem: 'channelConfig.receiverAuthorizer is not the offered receiverAuthorizer' }
  }
  if (config.withdrawDelay !== extra.withdrawDelay) {
    return { problem: 'channelConfig.withdrawDelay is not the offered withdrawDelay' }
  }
  if (channelIdOf(config, matched.network) !== payload.voucher.channelId.toLowerCase()) {
    return { problem: "voucher.channelId is not the channel config's id on this network" }
  }
  if (payload.type !== 'deposit') return { validUntil: longest }
  const minDeposit = typeof extra.minDeposit === 'string' ? BigInt(extra.minDeposit) : 0n
  if (BigInt(payload.deposit.amount) < minDeposit) {
    return { problem: `deposit.amount is below the offered minDeposit "${extra.minDeposit}"` }
  }
  // Not compared with the deposit: a top-up's voucher also spends what the channel holds, which
  // only the chain knows (the facilitator's verify reads it).
  const { validBefore, validAfter } = payload.deposit.authorization.erc3009Authorization
  const before = Number(validBefore)
  if (before <= nowSeconds)
    return { problem: 'the deposit authorization has expired (validBefore)' }
  if (before > longest) {
    return {
      problem: `the deposit authorization is valid for ${before - nowSeconds} s; the offer allows at most ${matched.maxTimeoutSeconds} s (maxTimeoutSeconds)`,
    }
  }
  if (Number(validAfter) > nowSeconds + skewSeconds) {
    return { problem: 'the deposit authorization is not valid yet (validAfter)' }
  }
  return { validUntil: before }
}
