import { createHash } from 'node:crypto'
import type { PaymentRequirements } from '@x402/core/types'
import { isSigned, readWireTransaction } from '../settlement/solana-wire.js'
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
 * - A channel voucher (x402 `batch-settlement`): the network, the channel id and the voucher's
 *   cumulative `maxClaimableAmount`, which grows by the price with every call. Proof: the
 *   lower-cased voucher signature.
 * - A channel deposit: the network, the channel id and the `salt` of its ERC-3009 authorization
 *   (whose nonce the SDK derives from both), so that a deposit that failed can be signed again
 *   with the same voucher. Proof: the authorization's and the voucher's signatures, lower-cased.
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
  if ('channelConfig' in payload) {
    const { channelId, maxClaimableAmount, signature } = payload.voucher
    if (payload.type === 'deposit') {
      const { salt, signature: authorized } = payload.deposit.authorization.erc3009Authorization
      return identity(
        `deposit|${network}|${channelId.toLowerCase()}|${salt.toLowerCase()}`,
        `${authorized.toLowerCase()}|${signature.toLowerCase()}`,
      )
    }
    // One cumulative amount of one channel is one call: a later call signs a higher amount.
    return identity(
      `voucher|${network}|${channelId.toLowerCase()}|${maxClaimableAmount}`,
      signature.toLowerCase(),
    )
  }
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

/** The message bytes and the signatures present (concatenated, in order) of a wire transaction. */
function solanaTransaction(
  wire: string,
): { message: Uint8Array; signatures: Uint8Array } | undefined {
  const tx = readWireTransaction(wire)
  return (
    tx && {
      message: tx.message,
      signatures: new Uint8Array(Buffer.concat(tx.signatures.filter(isSigned))),
    }
  )
}
