import { PaymentPayloadV2Schema } from '@x402/core/schemas'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier'
import { PaymentRequiredError } from './errors.js'
import type { LiveState } from './facilitator.js'
import { PAYMENT_IDENTIFIER_DECLARATION, paymentIdentifierOf } from './idempotency.js'
import type { Offer } from './offer.js'
import { type PaymentIdentity, paymentIdentity } from './payment-key.js'

/**
 * Largest PaymentPayload accepted, in bytes of its JSON (32 KiB), and of the Base64
 * `PAYMENT-SIGNATURE` that carries it over HTTP. A real one, with the `accepted` requirements,
 * `resource` and bazaar `extensions` it echoes, is a few KiB; anything larger is refused before
 * it is decoded, validated or sent to the facilitator.
 */
export const MAX_PAYMENT_BYTES = 32 * 1024

/** A payment that passed every check the service can make before the facilitator's verify. */
export interface PresentedPayment {
  /**
   * The PaymentPayload as it goes to the facilitator: as received, except that the extensions we
   * declared carry our own declaration (their echoed `info` was checked equal to it), so that no
   * schema a client wrote travels on.
   */
  payment: PaymentPayload
  /** The offered requirements it matched. */
  matched: PaymentRequirements
  /** Its identity: the authorization's key and the signature's proof. */
  identity: PaymentIdentity
  /** The `payment-identifier` id it carries, if any. */
  id?: string
}

/** UTF-8 size of a value's JSON; Infinity when it has none (nested too deep to serialise). */
function jsonBytes(value: unknown): number {
  try {
    return Buffer.byteLength(JSON.stringify(value) ?? '')
  } catch {
    return Number.POSITIVE_INFINITY
  }
}

const REQUIREMENT_FIELDS = ['scheme', 'network', 'amount', 'asset', 'payTo'] as const

/**
 * Which field of the `accepted` requirements a payment echoes departs from what was offered: the
 * scheme or network when no offer has it, else the first of amount, asset and payTo that differs
 * from the offer for that network.
 *
 * @example mismatch(offers, { ...offers[0], amount: '999' })
 * // 'amount "999" is not the offered "1000" for exact on eip155:8453'
 */
export function mismatch(
  offers: readonly PaymentRequirements[],
  accepted: PaymentRequirements,
): string {
  const offered = (field: 'scheme' | 'network') =>
    [...new Set(offers.map((offer) => offer[field]))].map((v) => JSON.stringify(v)).join(', ')
  if (!offers.some((offer) => offer.scheme === accepted.scheme)) {
    return `scheme ${JSON.stringify(accepted.scheme)} is not offered (offered: ${offered('scheme')})`
  }
  const offer = offers.find((o) => o.scheme === accepted.scheme && o.network === accepted.network)
  if (!offer) {
    return `network ${JSON.stringify(accepted.network)} is not offered (offered: ${offered('network')})`
  }
  for (const field of REQUIREMENT_FIELDS) {
    if (offer[field] !== accepted[field]) {
      return `${field} ${JSON.stringify(accepted[field])} is not the offered ${JSON.stringify(offer[field])} for ${offer.scheme} on ${offer.network}`
    }
  }
  return 'its accepted requirements (maxTimeoutSeconds or extra) differ from the offered ones'
}

/**
 * Checks a presented payment without the facilitator, cheapest first: its size, its shape (x402
 * v2 PaymentPayload, with the SDK's schema), then that it matches an offered rail, echoes our
 * extensions unaltered, and carries a well-formed `payment-identifier` id if any. Then names it
 * ({@link paymentIdentity}).
 *
 * @param presented - the decoded PaymentPayload JSON, not yet validated
 * @param bytes - the size of its JSON in bytes when the transport decoded it from text (HTTP);
 *   measured here otherwise
 * @throws {PaymentRequiredError} `invalid_payment`, with the reason in its message
 */
export async function readPayment(
  presented: unknown,
  state: LiveState,
  offer: Offer,
  bytes?: number,
): Promise<PresentedPayment> {
  const refuse = async (message: string, reason: string) =>
    new PaymentRequiredError('invalid_payment', message, await offer.refusal(reason))
  const size = bytes ?? jsonBytes(presented)
  if (size > MAX_PAYMENT_BYTES) {
    throw await refuse(
      `The payment is ${Number.isFinite(size) ? `${size} bytes` : 'too deeply nested'} as JSON; the limit is ${MAX_PAYMENT_BYTES / 1024} KiB`,
      'invalid_payload',
    )
  }
  const decoded = PaymentPayloadV2Schema.safeParse(presented)
  if (!decoded.success) {
    const issue = decoded.error.issues[0]
    const where = issue?.path.length ? ` at ${issue.path.join('.')}` : ''
    throw await refuse(
      `The payment is not a valid x402 v2 PaymentPayload${issue ? `: ${issue.message}${where}` : ''}`,
      'invalid_payload',
    )
  }
  // Validated, but forwarded as received: the schema strips keys the facilitator may need.
  const payment = presented as PaymentPayload
  const matched = state.server.findMatchingRequirements(offer.requirements, payment)
  if (!matched) {
    throw await refuse(
      `The payment matches none of the offered rails: ${mismatch(offer.requirements, payment.accepted)}`,
      'No matching payment requirements',
    )
  }
  const echo = state.server.validateExtensions(await offer.unpaid(), payment)
  if (!echo.valid) {
    throw await refuse(
      `The payment altered the "${echo.extensionKey}" extension it echoes`,
      echo.invalidReason ?? 'invalid_payload',
    )
  }
  const identifier = paymentIdentifierOf(payment)
  if (!identifier.valid) {
    throw await refuse(
      `The payment's payment-identifier extension is invalid: ${identifier.reason}`,
      'invalid_payload',
    )
  }
  return {
    payment: forwarded(payment, offer.extensions, identifier.id),
    matched,
    identity: paymentIdentity(payment, matched),
    ...(identifier.id ? { id: identifier.id } : {}),
  }
}

/** The payment with our declared extensions in place of their echoes (see {@link PresentedPayment}). */
function forwarded(
  payment: PaymentPayload,
  declared: Record<string, unknown>,
  id: string | undefined,
): PaymentPayload {
  const echoed = payment.extensions
  if (!echoed) return payment
  const extensions: Record<string, unknown> = { ...echoed }
  for (const key of Object.keys(echoed)) {
    if (key in declared) extensions[key] = declared[key]
  }
  if (PAYMENT_IDENTIFIER in echoed) {
    extensions[PAYMENT_IDENTIFIER] = {
      ...PAYMENT_IDENTIFIER_DECLARATION,
      info: { ...PAYMENT_IDENTIFIER_DECLARATION.info, ...(id ? { id } : {}) },
    }
  }
  return { ...payment, extensions }
}
