import { createHash } from 'node:crypto'
import { getBase64Encoder, getShortU16Decoder } from '@solana/kit'
import type { PaymentRequirements } from '@x402/core/types'
import type { ShapedPayment } from './payment-shape.js'

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

/**
 * The identity of a payment for the scheme `exact`, derived from what the payer signed, not from
 * how the PaymentPayload spells it:
 *
 * - EVM, EIP-3009 (x402 `exact` EVM scheme, `payload.authorization`): the CAIP-2 network, the
 *   asset, and the lower-cased `from` and `nonce` of the `transferWithAuthorization`. EIP-3009
 *   lets an authorizer use a nonce once per token contract, so these name the transfer; case,
 *   key order and the rest of the payload cannot change it. Proof: the lower-cased signature.
 * - Solana (x402 `exact` SVM scheme, `payload.transaction`): the network and the SHA-256 of the
 *   transaction's message bytes, which the payer signed (the wire transaction decoded from Base64,
 *   so that re-encodings agree). Proof: the signatures present, in order.
 *
 * @param payment - a payment that passed `checkPaymentShape` (payment-shape.ts)
 * @param matched - the offered requirements it matched (network and asset come from here)
 * @returns its identity, or undefined for a Solana transaction that is not a wire transaction
 * @example paymentIdentity(payment, matched) // { key: 'pay:5f1c…', proof: '9a0b…' }
 */
export function paymentIdentity(
  payment: ShapedPayment,
  matched: PaymentRequirements,
): PaymentIdentity | undefined {
  const payload = payment.payload
  const network = matched.network
  if ('authorization' in payload) {
    const { from, nonce } = payload.authorization
    return identity(
      `eip3009|${network}|${matched.asset.toLowerCase()}|${from.toLowerCase()}|${nonce.toLowerCase()}`,
      payload.signature.toLowerCase(),
    )
  }
  const decoded = solanaTransaction(payload.transaction)
  return decoded && identity(`svm|${network}|${sha256(decoded.message)}`, decoded.signatures)
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
 * `getTransactionDecoder`, without its full decode of every account address into base58.
 */
function solanaTransaction(
  wire: string,
): { message: Uint8Array; signatures: Uint8Array } | undefined {
  try {
    const bytes = base64.encode(wire)
    const [count, offset] = shortU16.read(bytes, 0)
    // Every transaction has a fee payer, whose signature comes first.
    if (count < 1) return undefined
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
