import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { PAYMENT_IDENTIFIER } from '@x402/extensions/payment-identifier'
import type { LiveState } from '../facilitators/link.js'
import { depthExceeded } from '../json-bounds.js'
import { PaymentRequiredError } from './errors.js'
import { PAYMENT_IDENTIFIER_DECLARATION, paymentIdentifierOf } from './idempotency.js'
import type { Offer } from './offer.js'
import { decodePaymentHeader } from './payment-header.js'
import { type PaymentIdentity, paymentIdentity } from './payment-key.js'
import {
  checkPayloadFor,
  checkPaymentShape,
  MAX_PAYMENT_BYTES,
  matchOffer,
  PAYMENT_BOUNDS,
  type ShapedPayment,
} from './payment-shape.js'

export { MAX_PAYMENT_BYTES } from './payment-shape.js'

/**
 * A payment as a transport presents it: the `PAYMENT-SIGNATURE` header's text (HTTP), or the
 * value of `_meta["x402/payment"]` (MCP), already parsed within the MCP body's bounds.
 */
export type PaymentSource = { header: string } | { value: unknown }

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
  /**
   * Until when (Unix seconds) the payment could be presented and settled: the guard keeps a
   * settled payment on record at least this long.
   */
  validUntil: number
}

/**
 * Reads a presented payment without the facilitator, cheapest first, so that nothing a client
 * sends reaches an SDK function unbounded: its size (32 KiB of JSON), its bounds and strict shape
 * (payment-shape.ts), the offered rail it names (compared field by field), what its payload says
 * (amount, payee, validity), the extensions it echoes (ours only, unaltered), a well-formed
 * `payment-identifier` id if any. Then names it ({@link paymentIdentity}).
 *
 * @param nowSeconds - our clock, in Unix seconds (the authorization's validity is checked on it)
 * @param allow - `refund`: the refund flow, which takes a `batch-settlement` refund and nothing else
 * @throws {PaymentRequiredError} `invalid_payment`, with the reason in its message
 * @example const presented = await readPayment({ header }, state, offer, Date.now() / 1000)
 */
export async function readPayment(
  source: PaymentSource,
  state: LiveState,
  offer: Offer,
  nowSeconds: number,
  allow: { refund: boolean } = { refund: false },
): Promise<PresentedPayment> {
  const refuse = async (message: string, reason = 'invalid_payload') =>
    new PaymentRequiredError('invalid_payment', message, await offer.refusal(reason))
  const decoded = decode(source)
  if ('problem' in decoded) throw await refuse(decoded.problem)
  const shaped = checkPaymentShape(decoded.value)
  if ('problem' in shaped) throw await refuse(shaped.problem)
  const payment = shaped.payment
  // MCP: measured as the header's JSON would be, now that its bounds make that cheap.
  const bytes = 'value' in source ? Buffer.byteLength(JSON.stringify(payment)) : 0
  if (bytes > MAX_PAYMENT_BYTES) {
    throw await refuse(
      `The payment could not be read: it is ${bytes} bytes as JSON; the limit is ${MAX_PAYMENT_BYTES / 1024} KiB`,
    )
  }
  const match = matchOffer(offer.requirements, payment.accepted)
  if ('problem' in match) {
    throw await refuse(
      `The payment matches none of the offered rails: ${match.problem}`,
      'No matching payment requirements',
    )
  }
  const matched = match.matched
  const payload = checkPayloadFor(payment, matched, nowSeconds, allow)
  if ('problem' in payload) throw await refuse(`The payment is refused: ${payload.problem}`)
  const echo = await echoProblem(payment, state, offer)
  if (echo) throw await refuse(echo.message, echo.reason)
  const identifier = paymentIdentifierOf(payment)
  if (!identifier.valid) {
    throw await refuse(
      `The payment's payment-identifier extension is invalid: ${identifier.reason}`,
    )
  }
  const identity = paymentIdentity(payment, matched)
  if (!identity)
    throw await refuse('The payment is refused: its transaction is not a Solana wire transaction')
  return {
    payment: forwarded(payment, offer.extensions, identifier.id),
    matched,
    identity,
    ...(identifier.id ? { id: identifier.id } : {}),
    validUntil: payload.validUntil,
  }
}

/**
 * Why the extensions a payment echoes are refused: one we did not offer, or one of ours altered
 * (the SDK's `validateExtensions`, on a payment already bounded); undefined when they are fine.
 */
async function echoProblem(
  payment: ShapedPayment,
  state: LiveState,
  offer: Offer,
): Promise<{ message: string; reason?: string } | undefined> {
  const undeclared = Object.keys(payment.extensions ?? {}).find((key) => !(key in offer.extensions))
  if (undeclared !== undefined) {
    return {
      message: `The payment carries an extension that was not offered: ${JSON.stringify(undeclared.slice(0, 64))}`,
    }
  }
  const echo = state.server.validateExtensions(await offer.unpaid(), payment)
  if (echo.valid) return undefined
  return {
    message: `The payment altered the "${echo.extensionKey}" extension it echoes`,
    reason: echo.invalidReason ?? 'invalid_payload',
  }
}

/**
 * The decoded PaymentPayload JSON of a source (a header within {@link MAX_PAYMENT_BYTES}, nested
 * no deeper than {@link PAYMENT_BOUNDS}), or the message that refuses it.
 */
function decode(source: PaymentSource): { value: unknown } | { problem: string } {
  if ('value' in source) return { value: source.value }
  const unread = (why: string) => ({ problem: `The payment could not be read: ${why}` })
  const header = source.header.trim()
  if (header.length > MAX_PAYMENT_BYTES) {
    return unread(
      `PAYMENT-SIGNATURE is ${header.length} bytes; the limit is ${MAX_PAYMENT_BYTES / 1024} KiB`,
    )
  }
  const read = decodePaymentHeader(header, PAYMENT_BOUNDS.depth)
  if ('value' in read) return { value: read.value }
  // The words checkPaymentShape gives the same payment once parsed.
  if (read.problem === 'depth') {
    return { problem: `The payment is out of bounds: ${depthExceeded(PAYMENT_BOUNDS.depth)}` }
  }
  return unread(
    read.problem === 'json'
      ? 'PAYMENT-SIGNATURE is Base64, but not of a JSON PaymentPayload'
      : 'PAYMENT-SIGNATURE is not Base64 (RFC 4648 section 4)',
  )
}

/** The payment with our declared extensions in place of their echoes (see {@link PresentedPayment}). */
function forwarded(
  payment: ShapedPayment,
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
