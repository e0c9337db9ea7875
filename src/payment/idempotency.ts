import type { PaymentPayload } from '@x402/core/types'
import {
  declarePaymentIdentifierExtension,
  extractAndValidatePaymentIdentifier,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier'

/**
 * The x402 `payment-identifier` extension as every PaymentRequired declares it: optional
 * (`required: false`). A client that echoes it with an `id` (16 to 128 characters of
 * `[A-Za-z0-9_-]`, e.g. from `appendPaymentIdentifierToExtensions`) makes its paid call
 * idempotent for 120 s under that id; without one, the payment payload itself is the key.
 */
export const PAYMENT_IDENTIFIER_DECLARATION = declarePaymentIdentifierExtension(false)

/**
 * A tool's PaymentRequired extensions with the `payment-identifier` declaration added.
 *
 * @param extensions - the tool's other extensions (bazaar discovery info), if any
 * @returns a new object; the argument is not changed
 */
export function withPaymentIdentifier(
  extensions: Record<string, unknown> | undefined,
): Record<string, unknown> {
  return { ...extensions, [PAYMENT_IDENTIFIER]: PAYMENT_IDENTIFIER_DECLARATION }
}

/** The client's payment identifier: absent, valid (with its `id`), or invalid (with the reason). */
export type PaymentIdentifierOf = { valid: true; id?: string } | { valid: false; reason: string }

/**
 * Reads the `payment-identifier` id a PaymentPayload carries, validated with the extension's own
 * schema (`extractAndValidatePaymentIdentifier`).
 *
 * @example paymentIdentifierOf(payment) // { valid: true, id: 'pay_7d5d747be160e280504c099d984bcfe0' }
 */
export function paymentIdentifierOf(payment: PaymentPayload): PaymentIdentifierOf {
  if (payment.extensions?.[PAYMENT_IDENTIFIER] === undefined) return { valid: true }
  const { id, validation } = extractAndValidatePaymentIdentifier(payment)
  if (!validation.valid) {
    return { valid: false, reason: (validation.errors ?? ['malformed']).join('; ') }
  }
  return id ? { valid: true, id } : { valid: true }
}
