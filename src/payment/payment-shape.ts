import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { z } from 'zod'
import { type JsonBounds, jsonBoundExceeded } from '../json-bounds.js'
import {
  BATCH_SETTLEMENT,
  type ChannelPayload,
  CORRECTIVE_EXTRA,
  channelPayloadShape,
  checkChannelPayload,
} from './voucher-shape.js'

/**
 * Largest PaymentPayload accepted, in bytes of its JSON (32 KiB), and of the Base64
 * `PAYMENT-SIGNATURE` that carries it over HTTP. A real one, with the `accepted` requirements,
 * `resource` and the extensions it echoes, is a few KiB.
 */
export const MAX_PAYMENT_BYTES = 32 * 1024

/**
 * The bounds of a PaymentPayload's JSON, checked by one linear walk before anything else reads it:
 * the SDK's matching (`deepEqual`) re-serialises every subtree at every level, so its cost grows
 * with depth × size, and the official client's payments stay far inside these.
 */
export const PAYMENT_BOUNDS: JsonBounds = {
  depth: 32,
  nodes: 4096,
  members: 64,
  string: 8192,
  text: MAX_PAYMENT_BYTES,
}

/**
 * Seconds a payer's clock may run ahead of ours: an EIP-3009 `validBefore` up to this much past
 * `now + maxTimeoutSeconds` is still accepted.
 */
export const CLOCK_SKEW_SECONDS = 60

/**
 * Seconds a Solana transaction can still land after it was signed: its blockhash is valid for 150
 * blocks (`MAX_PROCESSING_AGE`, about 60 to 90 s at mainnet block times); this leaves room for
 * slow blocks. A settled Solana payment is kept on record at least this long.
 */
export const SOLANA_TRANSACTION_LIFETIME_SECONDS = 300

/** Longest Solana wire transaction (`PACKET_DATA_SIZE`, 1232 bytes), as Base64 characters. */
const MAX_SOLANA_TRANSACTION_BASE64 = 4 * Math.ceil(1232 / 3)

const digits = z
  .string()
  .regex(/^(0|[1-9][0-9]{0,77})$/, 'expected an unsigned integer in decimal digits')
const hex = (bytes: number) =>
  z
    .string()
    .regex(new RegExp(`^0x[0-9a-fA-F]{${bytes * 2}}$`), `expected 0x and ${bytes} bytes in hex`)
const text = (max: number) => z.string().min(1).max(max)

/** x402 v2 PaymentRequirements as a payer echoes them in `accepted`: no member of its own. */
const requirementsShape = z.strictObject({
  scheme: text(64),
  network: text(128),
  amount: digits,
  asset: text(128),
  payTo: text(128),
  maxTimeoutSeconds: z.number().int().positive(),
  extra: z.record(z.string(), z.unknown()).optional(),
})

/** The `exact` EVM payload (EIP-3009 `transferWithAuthorization`, x402 `exact` EVM scheme). */
const eip3009Shape = z.strictObject({
  signature: z
    .string()
    .regex(
      /^0x(?:[0-9a-fA-F]{2}){65,4096}$/,
      'expected 0x and a hex signature of 65 bytes or more',
    ),
  authorization: z.strictObject({
    from: hex(20),
    to: hex(20),
    value: digits,
    validAfter: digits,
    validBefore: digits,
    nonce: hex(32),
  }),
})

/** The `exact` SVM payload: a partially signed wire transaction in Base64. */
const svmShape = z.strictObject({
  transaction: z
    .string()
    .min(4)
    .max(MAX_SOLANA_TRANSACTION_BASE64)
    .regex(/^[A-Za-z0-9+/]+={0,2}$/, 'expected Base64'),
})

/**
 * The x402 v2 PaymentPayload, and nothing more; its `payload` is checked against the scheme and
 * network it names (`accepted`): `batch-settlement` on `eip155:*` against the channel payloads
 * (voucher-shape.ts); `exact` against {@link eip3009Shape} on `eip155:*`, {@link svmShape}
 * otherwise.
 */
const paymentShape = z.strictObject({
  x402Version: z.literal(2),
  resource: z
    .strictObject({
      url: text(2048),
      description: z.string().optional(),
      mimeType: z.string().optional(),
    })
    .optional(),
  accepted: requirementsShape,
  payload: z.record(z.string(), z.unknown()),
  extensions: z.record(z.string(), z.unknown()).optional(),
})

/** An EIP-3009 `exact` payload, as {@link checkPaymentShape} lets it through. */
export type Eip3009Payload = z.infer<typeof eip3009Shape>

/** A PaymentPayload that passed {@link checkPaymentShape}. */
export type ShapedPayment = Omit<PaymentPayload, 'payload'> & {
  payload: Eip3009Payload | z.infer<typeof svmShape> | ChannelPayload
}

/**
 * Checks a decoded PaymentPayload before any SDK function sees it: first its bounds
 * ({@link PAYMENT_BOUNDS}, one linear walk), then its shape: x402 v2, `exact` on EVM (EIP-3009) or
 * Solana, or `batch-settlement` on EVM (a deposit, voucher or refund), no member we do not know (extensions aside: their keys are checked against ours by the
 * caller), amounts in decimal digits.
 *
 * @returns the payment, typed, or the reason it is refused (for an `invalid_payment` message)
 * @example checkPaymentShape(JSON.parse(json)) // { payment } or { problem: 'accepted.amount: expected …' }
 */
export function checkPaymentShape(
  value: unknown,
): { payment: ShapedPayment } | { problem: string } {
  const excess = jsonBoundExceeded(value, PAYMENT_BOUNDS)
  if (excess) return { problem: `The payment is out of bounds: ${excess}` }
  const parsed = paymentShape.safeParse(value)
  if (!parsed.success) return { problem: notAPayment(parsed.error.issues[0]) }
  const { network, scheme } = parsed.data.accepted
  const evm = network.startsWith('eip155:')
  const channel = evm && scheme === BATCH_SETTLEMENT
  const payload = (channel ? channelPayloadShape : evm ? eip3009Shape : svmShape).safeParse(
    parsed.data.payload,
  )
  if (!payload.success) {
    const issue = payload.error.issues[0]
    return {
      problem: notAPayment(
        issue && { ...issue, path: ['payload', ...issue.path] },
        channel ? BATCH_SETTLEMENT : 'exact',
      ),
    }
  }
  // Checked, but used as received: the facilitator gets what the payer signed and sent.
  return { payment: value as ShapedPayment }
}

/** The refusal of a value that is not a PaymentPayload, naming its first issue and where. */
function notAPayment(
  issue: { message: string; path: PropertyKey[] } | undefined,
  scheme = 'exact',
): string {
  const where = issue?.path.length ? ` at ${issue.path.map(String).join('.')}` : ''
  return `The payment is not a valid x402 v2 PaymentPayload of scheme ${scheme}${issue ? `: ${issue.message}${where}` : ''}`
}

/**
 * The offered requirements a payment's `accepted` names, compared field by field (extra too,
 * member by member): every field must be what we offered, nothing more. Linear in `accepted`,
 * which {@link checkPaymentShape} bounded; the SDK's `findMatchingRequirements` is never called.
 *
 * @returns the matching offer, or why none matches (the first field that differs)
 * @example matchOffer(offers, { ...offers[0], amount: '999' })
 * // { problem: 'amount "999" is not the offered "1000" for exact on eip155:8453' }
 */
export function matchOffer(
  offers: readonly PaymentRequirements[],
  accepted: PaymentRequirements,
): { matched: PaymentRequirements } | { problem: string } {
  const offered = (field: 'scheme' | 'network') =>
    [...new Set(offers.map((offer) => offer[field]))].map((v) => JSON.stringify(v)).join(', ')
  if (!offers.some((offer) => offer.scheme === accepted.scheme)) {
    return {
      problem: `scheme ${JSON.stringify(accepted.scheme)} is not offered (offered: ${offered('scheme')})`,
    }
  }
  const offer = offers.find((o) => o.scheme === accepted.scheme && o.network === accepted.network)
  if (!offer) {
    return {
      problem: `network ${JSON.stringify(accepted.network)} is not offered (offered: ${offered('network')})`,
    }
  }
  for (const field of ['amount', 'asset', 'payTo', 'maxTimeoutSeconds'] as const) {
    if (offer[field] !== accepted[field]) {
      return {
        problem: `${field} ${JSON.stringify(accepted[field])} is not the offered ${JSON.stringify(offer[field])} for ${offer.scheme} on ${offer.network}`,
      }
    }
  }
  const ours = offer.extra ?? {}
  const theirs = accepted.extra ?? {}
  const keys = new Set([...Object.keys(ours), ...Object.keys(theirs)])
  for (const key of keys) {
    if (offer.scheme === BATCH_SETTLEMENT && CORRECTIVE_EXTRA.has(key) && !(key in ours)) continue
    // Our extra holds strings only (an EIP-712 domain, a fee payer): a strict comparison suffices.
    if (ours[key] !== theirs[key]) {
      return {
        problem: `extra.${key} is not the offered one for ${offer.scheme} on ${offer.network}`,
      }
    }
  }
  return { matched: offer }
}

/**
 * What the payload itself must say for the requirements it matched, before the facilitator is
 * asked: the EVM rail takes an EIP-3009 authorization of exactly the offered amount to our payTo,
 * valid now and for no longer than the offer allows (`maxTimeoutSeconds`, plus
 * {@link CLOCK_SKEW_SECONDS}); the Solana rail takes a transaction.
 *
 * A `batch-settlement` payload is checked by `checkChannelPayload` (voucher-shape.ts); a refund
 * only with `allow.refund` (the refund flow), which accepts nothing else.
 *
 * @param nowSeconds - our clock, in Unix seconds
 * @returns when the payment stops being presentable (Unix seconds: the authorization's
 *   `validBefore`, or {@link SOLANA_TRANSACTION_LIFETIME_SECONDS} from now), or why it is refused
 */
export function checkPayloadFor(
  payment: ShapedPayment,
  matched: PaymentRequirements,
  nowSeconds: number,
  allow: { refund: boolean } = { refund: false },
): { validUntil: number } | { problem: string } {
  const evm = matched.network.startsWith('eip155:')
  const payload = payment.payload
  if ('channelConfig' in payload) {
    return checkChannelPayload(payload, matched, nowSeconds, CLOCK_SKEW_SECONDS, allow)
  }
  if (allow.refund) return { problem: 'only a batch-settlement refund is accepted with GET' }
  if (!('authorization' in payload)) {
    return evm
      ? { problem: 'an EVM payment carries an EIP-3009 authorization, not a transaction' }
      : { validUntil: nowSeconds + SOLANA_TRANSACTION_LIFETIME_SECONDS }
  }
  if (!evm) return { problem: 'a Solana payment carries a transaction, not an authorization' }
  const { value, to, validAfter, validBefore } = payload.authorization
  if (value !== matched.amount) {
    return { problem: `authorization.value "${value}" is not the price "${matched.amount}"` }
  }
  if (to.toLowerCase() !== matched.payTo.toLowerCase()) {
    return { problem: 'authorization.to is not the offered payTo' }
  }
  const before = Number(validBefore)
  if (before <= nowSeconds) return { problem: 'the authorization has expired (validBefore)' }
  const longest = nowSeconds + matched.maxTimeoutSeconds + CLOCK_SKEW_SECONDS
  if (before > longest) {
    return {
      problem: `the authorization is valid for ${before - nowSeconds} s; the offer allows at most ${matched.maxTimeoutSeconds} s (maxTimeoutSeconds)`,
    }
  }
  if (Number(validAfter) > nowSeconds + CLOCK_SKEW_SECONDS) {
    return { problem: 'the authorization is not valid yet (validAfter)' }
  }
  return { validUntil: before }
}
