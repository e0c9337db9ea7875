import { isDeepStrictEqual } from 'node:util'
import type { PaymentPayload } from '@x402/core/types'
import {
  declarePaymentIdentifierExtension,
  isValidPaymentId,
  PAYMENT_ID_MAX_LENGTH,
  PAYMENT_ID_MIN_LENGTH,
  PAYMENT_IDENTIFIER,
} from '@x402/extensions/payment-identifier'

/**
 * The x402 `payment-identifier` extension as every PaymentRequired declares it: optional
 * (`required: false`). A client that echoes it with an `id` (16 to 128 characters of
 * `[A-Za-z0-9_-]`, e.g. from `appendPaymentIdentifierToExtensions`) makes its paid call
 * idempotent for 120 s under that id; without one, the payment itself is the key.
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

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Reads the `payment-identifier` id a PaymentPayload carries, checked by our own rules, never by
 * a schema the client sent: `@x402/extensions`' `validatePaymentIdentifier` compiles the echoed
 * `schema` with a new Ajv on every call and runs it, so a client-supplied `pattern` such as
 * `^(a+)+$` would backtrack on the event loop for hours, and every compile is costly. Here the
 * echo must carry our declaration's `schema` unchanged (or none), its
 * `info.required` must be a boolean and its `info.id`, when present, 16 to 128 characters of
 * `[A-Za-z0-9_-]` (`isValidPaymentId`, a fixed linear regex). Cost: one structural comparison
 * of at most the 32 KiB a payment may hold.
 *
 * @example paymentIdentifierOf(payment) // { valid: true, id: 'pay_7d5d747be160e280504c099d984bcfe0' }
 */
export function paymentIdentifierOf(payment: PaymentPayload): PaymentIdentifierOf {
  const echoed = payment.extensions?.[PAYMENT_IDENTIFIER]
  if (echoed === undefined) return { valid: true }
  if (!isObject(echoed) || !isObject(echoed.info)) {
    return { valid: false, reason: 'it must be an object with an "info" object' }
  }
  if (
    echoed.schema !== undefined &&
    !isDeepStrictEqual(echoed.schema, PAYMENT_IDENTIFIER_DECLARATION.schema)
  ) {
    return { valid: false, reason: 'its "schema" differs from the one offered; echo it unchanged' }
  }
  const { required, id } = echoed.info
  if (typeof required !== 'boolean') {
    return { valid: false, reason: '"info.required" must be a boolean' }
  }
  if (id === undefined) return { valid: true }
  if (typeof id !== 'string' || !isValidPaymentId(id)) {
    return {
      valid: false,
      reason: `"info.id" must be ${PAYMENT_ID_MIN_LENGTH} to ${PAYMENT_ID_MAX_LENGTH} characters of [A-Za-z0-9_-]`,
    }
  }
  return { valid: true, id }
}
