import { decodeProtectedHeader, errors, type JWTVerifyGetKey, jwtVerify, SignJWT } from 'jose'
import { z } from 'zod'
import type { SigningKey } from './keys.js'

/** Key of the delivery receipt in a SettleResponse's `extensions`. */
export const DELIVERY_RECEIPT = 'delivery-receipt'

/**
 * `typ` of a delivery receipt's JWS header (RFC 8725 section 3.11, explicit typing): the same key
 * signs the `offer-receipt` artifacts, and a verifier must not take one for the other.
 */
export const DELIVERY_RECEIPT_TYPE = 'delivery-receipt+jwt'

/** Largest receipt read, in characters of its compact JWS (a real one is under 1 KiB). */
export const MAX_RECEIPT_CHARS = 8 * 1024

const sha256Hex = z.string().regex(/^[0-9a-f]{64}$/, 'must be 64 lower-case hex characters')
const text = z.string().min(1).max(512)

/**
 * The claims of a delivery receipt (a JWT, RFC 7519, signed with EdDSA over Ed25519, RFC 8037).
 * They bind one delivered result to its input and its payment. They hold no input, no result
 * and no payer address: whoever holds the input and the result checks them against the digests.
 */
export const deliveryClaimsSchema = z.object({
  iss: text.describe('The service: its public base URL.'),
  iat: z
    .number()
    .int()
    .min(0)
    .describe(
      'Time of the call, in Unix seconds: the clock the tool read (jwt-inspect reports it as validity.now), so recomputing the tool at iat gives the same result.',
    ),
  resource: text.describe('The paid resource URL (the tool endpoint, or the MCP endpoint).'),
  tool: text.describe('The tool id, e.g. "hash".'),
  input_sha256: sha256Hex.describe(
    'SHA-256 (lower-case hex) of the RFC 8785 canonical JSON of the checked input: the body with the schema defaults applied.',
  ),
  result_sha256: sha256Hex.describe(
    'SHA-256 (lower-case hex) of the RFC 8785 canonical JSON of the envelope\'s "result".',
  ),
  network: text.describe('CAIP-2 network of the settlement.'),
  asset: text.describe('The token paid (USDC contract or mint).'),
  amount: z
    .string()
    .regex(/^\d{1,78}$/)
    .describe('Amount settled, in atomic units.'),
  pay_to: text.describe('The address paid.'),
  transaction: text
    .optional()
    .describe(
      'The settlement transaction (hash or signature); absent for a voucher call (channel, cumulative).',
    ),
  channel: z
    .string()
    .regex(/^0x[0-9a-f]{64}$/)
    .optional()
    .describe('A voucher call (x402 batch-settlement): the channel id it was charged to.'),
  cumulative: z
    .string()
    .regex(/^\d{1,78}$/)
    .optional()
    .describe(
      "A voucher call: the voucher's cumulative amount (maxClaimableAmount), atomic units; the channel has been charged up to it.",
    ),
})

/** The claims of a delivery receipt. */
export type DeliveryClaims = z.infer<typeof deliveryClaimsSchema>

/** What the gate knows of a delivery: every claim but `iss`, which is the service's own. */
export type Delivery = Omit<DeliveryClaims, 'iss'>

/**
 * Signs a delivery receipt: a compact JWS (RFC 7515) of the claims, header
 * `{alg: "EdDSA", kid, typ: "delivery-receipt+jwt"}`, with jose.
 *
 * @example
 * await signDeliveryReceipt(key, { iss: 'https://tools.example', iat: 1700000000, tool: 'hash', … })
 * // 'eyJhbGciOiJFZERTQSIsImtpZCI6…'
 * @throws {Error} when a claim is malformed (a bug of the caller: nothing is signed)
 */
export async function signDeliveryReceipt(
  key: SigningKey,
  claims: DeliveryClaims,
): Promise<string> {
  const checked = deliveryClaimsSchema.parse(claims)
  if (!checked.transaction && !(checked.channel && checked.cumulative)) {
    throw new Error(
      'a delivery receipt names a transaction, or a channel and its cumulative amount',
    )
  }
  return new SignJWT(checked)
    .setProtectedHeader({ alg: 'EdDSA', kid: key.publicJwk.kid, typ: DELIVERY_RECEIPT_TYPE })
    .sign(key.privateKey)
}

/**
 * Why a receipt is not ours, or not a receipt:
 * - `malformed`: not a compact JWS with a JSON header and payload, or no `kid`;
 * - `unknown_key`: its `kid` names no key of the JWKS (current or retired);
 * - `bad_signature`: the key is ours but the signature does not match (a claim or the header was
 *   changed, or another key signed it);
 * - `invalid_claims`: signed by us but not a delivery receipt of this service (`typ`, `iss`, a
 *   missing or malformed claim).
 */
export type SignatureFailure = 'malformed' | 'unknown_key' | 'bad_signature' | 'invalid_claims'

/** The verdict on a receipt's signature and claims. */
export type SignatureVerdict =
  | { valid: true; kid: string; claims: DeliveryClaims }
  | { valid: false; reason: SignatureFailure; message: string; kid?: string }

/** A receipt's verdict, with whether its key is the current or a retired one. */
export type ReceiptVerdict =
  | (Extract<SignatureVerdict, { valid: true }> & { key: 'current' | 'retired' })
  | Extract<SignatureVerdict, { valid: false }>

/** The `kid` of a compact JWS header, without verifying anything; undefined when unreadable. */
function kidOf(receipt: string): string | undefined {
  try {
    const { kid } = decodeProtectedHeader(receipt)
    return typeof kid === 'string' ? kid : undefined
  } catch {
    return undefined
  }
}

/**
 * Verifies a delivery receipt against a JWKS (the service's, current and retired keys), with jose:
 * EdDSA only, `typ` `delivery-receipt+jwt`, `iss` the service, then every claim's shape.
 *
 * @param keys - the key set, e.g. jose's `createLocalJWKSet(jwks)`
 * @example
 * await verifyDeliveryReceipt(receipt, createLocalJWKSet(jwks), 'https://tools.example')
 * // { valid: true, kid: 'kPrK_qmx…', claims: { iss: 'https://tools.example', tool: 'hash', … } }
 * @returns the verdict; never throws for a bad receipt
 */
export async function verifyDeliveryReceipt(
  receipt: string,
  keys: JWTVerifyGetKey,
  issuer: string,
): Promise<SignatureVerdict> {
  if (receipt.length > MAX_RECEIPT_CHARS) {
    return {
      valid: false,
      reason: 'malformed',
      message: `The receipt is ${receipt.length} characters; a receipt is at most ${MAX_RECEIPT_CHARS}`,
    }
  }
  const kid = kidOf(receipt)
  const withKid = kid === undefined ? {} : { kid }
  if (kid === undefined) {
    return {
      valid: false,
      reason: 'malformed',
      message: 'The receipt is not a compact JWS whose header names its key (kid)',
    }
  }
  let payload: unknown
  try {
    ;({ payload } = await jwtVerify(receipt, keys, {
      algorithms: ['EdDSA'],
      typ: DELIVERY_RECEIPT_TYPE,
      issuer,
    }))
  } catch (error) {
    return { valid: false, ...withKid, ...describeJoseFailure(error, kid) }
  }
  const claims = deliveryClaimsSchema.safeParse(payload)
  if (!claims.success) {
    const issue = claims.error.issues[0]
    return {
      valid: false,
      ...withKid,
      reason: 'invalid_claims',
      message: `The receipt's claim "${issue?.path.join('.')}" is missing or malformed: ${issue?.message}`,
    }
  }
  return { valid: true, kid, claims: claims.data }
}

/** A jose verification error as a {@link SignatureFailure} and a sentence. */
function describeJoseFailure(
  error: unknown,
  kid: string,
): { reason: SignatureFailure; message: string } {
  if (error instanceof errors.JWKSNoMatchingKey) {
    return {
      reason: 'unknown_key',
      message: `The receipt's key "${kid}" is not in this service's JWKS (current or retired keys)`,
    }
  }
  if (error instanceof errors.JWSSignatureVerificationFailed) {
    return {
      reason: 'bad_signature',
      message: `The signature does not match the receipt's content for key "${kid}": it was altered or signed by another key`,
    }
  }
  if (error instanceof errors.JWTClaimValidationFailed) {
    return {
      reason: 'invalid_claims',
      message: `The receipt's "${error.claim}" ${error.reason === 'check_failed' ? 'does not match this service' : 'is missing or malformed'}: ${error.message}`,
    }
  }
  if (error instanceof errors.JOSEAlgNotAllowed) {
    return { reason: 'invalid_claims', message: 'The receipt is not signed with EdDSA' }
  }
  return {
    reason: 'malformed',
    message: `The receipt is not a valid compact JWS: ${(error as Error)?.message ?? String(error)}`,
  }
}
