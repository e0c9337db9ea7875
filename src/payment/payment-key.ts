import { createHash } from 'node:crypto'
import { getBase64Encoder, getShortU16Decoder } from '@solana/kit'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import canonicalize from 'canonicalize'

/**
 * What names one payment, whatever its spelling: `key` names the authorization (the guard holds
 * it, so that one authorization is settled at most once), `proof` the payer's signature over it
 * (a request presents "the same payment" only with both). Both are lower-case hex SHA-256 digests:
 * neither holds a payer address.
 */
export interface PaymentIdentity {
  /** `pay:` + SHA-256 of the authorization's identity (see {@link paymentIdentity}). */
  key: string
  /** SHA-256 of the signature material, normalised. */
  proof: string
}

const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex')

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

const lowerHex = (value: unknown) => (typeof value === 'string' ? value.toLowerCase() : '')

/**
 * The identity of a payment for the scheme `exact`, derived from what the payer signed, not from
 * how the PaymentPayload spells it:
 *
 * - EVM, EIP-3009 (x402 `exact` EVM scheme, `payload.authorization`): the CAIP-2 network, the
 *   asset, and the lower-cased `from` and `nonce` of the `transferWithAuthorization`. EIP-3009
 *   lets an authorizer use a nonce once per token contract, so these name the transfer; case,
 *   key order and the rest of the payload cannot change it. Proof: the lower-cased signature.
 * - EVM, Permit2 (`payload.permit2Authorization`): the network, `from` and the Permit2 `nonce`
 *   (unique per owner in Permit2's nonce bitmap). Proof: the lower-cased signature.
 * - Solana (x402 `exact` SVM scheme, `payload.transaction`): the network and the SHA-256 of the
 *   transaction's message bytes, which the payer signed (the wire transaction decoded from Base64,
 *   so that re-encodings agree). Proof: the signatures present, in order.
 * - Anything else (a payload the facilitator will refuse): the RFC 8785 form of `payload` with
 *   hex strings lower-cased, for both.
 *
 * @param payment - the presented PaymentPayload (already checked against PaymentPayloadV2Schema)
 * @param matched - the offered requirements it matched (network and asset come from here)
 * @example paymentIdentity(payment, matched) // { key: 'pay:5f1c…', proof: '9a0b…' }
 */
export function paymentIdentity(
  payment: PaymentPayload,
  matched: PaymentRequirements,
): PaymentIdentity {
  const payload = payment.payload as Record<string, unknown>
  const network = matched.network
  if (isObject(payload.authorization)) {
    const { from, nonce } = payload.authorization
    return identity(
      `eip3009|${network}|${lowerHex(matched.asset)}|${lowerHex(from)}|${lowerHex(nonce)}`,
      lowerHex(payload.signature),
    )
  }
  if (isObject(payload.permit2Authorization)) {
    const { from, nonce } = payload.permit2Authorization
    return identity(
      `permit2|${network}|${lowerHex(from)}|${String(nonce ?? '')}`,
      lowerHex(payload.signature),
    )
  }
  if (typeof payload.transaction === 'string') {
    const decoded = solanaTransaction(payload.transaction)
    if (decoded) return identity(`svm|${network}|${sha256(decoded.message)}`, decoded.signatures)
  }
  const canonical = otherPayload(payload)
  return identity(`other|${network}|${canonical}`, canonical)
}

function identity(name: string, proof: string | Uint8Array): PaymentIdentity {
  return { key: `pay:${sha256(name)}`, proof: sha256(proof) }
}

const base64 = getBase64Encoder()
const shortU16 = getShortU16Decoder()
/** Length of an Ed25519 signature in a wire transaction. */
const SIGNATURE_BYTES = 64

/**
 * The message bytes and the signatures (those present, concatenated) of a wire transaction, as
 * the Solana wire format lays them out: a compact-u16 count of signatures, the 64-byte signatures
 * (all zeros for a signer that has not signed yet: the facilitator's fee payer), then the message,
 * whose header starts (after a version byte `0x80 | version` for a versioned message) with the
 * number of required signatures, which must equal the count. The same checks as @solana/kit's
 * `getTransactionDecoder`, whose full decode (every account address into base58) cost 0.12 ms of
 * the main thread per Solana payment here (bench/README.md, "Paid calls against the peer").
 */
function solanaTransaction(
  wire: string,
): { message: Uint8Array; signatures: Uint8Array } | undefined {
  try {
    const bytes = base64.encode(wire)
    const [count, offset] = shortU16.read(bytes, 0)
    const start = offset + count * SIGNATURE_BYTES
    const message = bytes.subarray(start)
    const version = message[0]
    if (version === undefined) return undefined
    const versioned = (version & 0x80) !== 0
    // Version 0 is the only versioned message there is (MAX_SUPPORTED_TRANSACTION_VERSION).
    if (versioned && version !== 0x80) return undefined
    if (message[versioned ? 1 : 0] !== count) return undefined
    const present: Uint8Array[] = []
    for (let at = offset; at < start; at += SIGNATURE_BYTES) {
      const signature = bytes.subarray(at, at + SIGNATURE_BYTES)
      if (signature.some((b) => b !== 0)) present.push(signature)
    }
    return { message: new Uint8Array(message), signatures: new Uint8Array(Buffer.concat(present)) }
  } catch {
    return undefined
  }
}

/**
 * The fallback's normal form of a payload; its JSON as written when it is nested too deep to
 * walk (it passed the 32 KiB limit, whose check serialised it).
 */
function otherPayload(payload: Record<string, unknown>): string {
  try {
    return canonicalize(lowerHexStrings(payload)) ?? ''
  } catch {
    return JSON.stringify(payload)
  }
}

/** A copy of a JSON value with `0x` hex strings lower-cased (the fallback's normal form). */
function lowerHexStrings(value: unknown): unknown {
  if (typeof value === 'string')
    return /^0[xX][0-9a-fA-F]*$/.test(value) ? value.toLowerCase() : value
  if (Array.isArray(value)) return value.map(lowerHexStrings)
  if (isObject(value)) {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, lowerHexStrings(v)]))
  }
  return value
}
