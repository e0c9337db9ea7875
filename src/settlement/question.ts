import { createHash } from 'node:crypto'
import { getBase58Decoder } from '@solana/kit'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { isSigned, readWireTransaction } from './solana-wire.js'
import type { SettlementQuestion } from './types.js'

const NONCE = /^0x[0-9a-fA-F]{64}$/
const DECIMAL = /^[0-9]{1,20}$/
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/

/**
 * The question the chain is asked about a settlement in doubt, built from the payment presented
 * and the requirements it matched (`exact` scheme only). It keeps what finds the transfer on chain
 * and nothing that names the payer:
 * - EVM (`eip155:*`): the EIP-3009 authorization's `nonce` (lowercase 0x + 64 hex) and
 *   `validBefore` (epoch seconds);
 * - Solana (`solana:*`): the wire transaction's recent blockhash (base58) and the SHA-256 (lowercase
 *   hex) of the payer's signature bytes (the one non-empty signature of a signer other than the
 *   facilitator's fee payer, `requirements.extra.feePayer`).
 * Network, asset, payTo and amount come from the requirements; `presentedAt` is `nowSeconds`
 * (call it when the payment is presented, or pass that time). Given `payerKey` (the service's
 * keyed hash of a payer address), the EVM question also holds the authorizer's keyed hash, never
 * the address.
 *
 * The payload's size is bounded by the gate before this runs.
 *
 * @returns the question, or `undefined` when the payment cannot be read as an `exact` payment of
 *   that rail (another scheme, a malformed nonce or transaction, no payer signature…). Never throws.
 */
export function questionOf(
  payment: PaymentPayload,
  requirements: PaymentRequirements,
  nowSeconds: number = Math.floor(Date.now() / 1000),
  payerKey?: (address: string) => string,
): SettlementQuestion | undefined {
  if (requirements.scheme !== 'exact') return undefined
  const { network, asset, payTo, amount } = requirements
  const base = { network, asset, payTo, amount, presentedAt: nowSeconds }
  const payload = payment.payload as Record<string, unknown> | undefined
  if (typeof payload !== 'object' || payload === null) return undefined
  if (network.startsWith('eip155:')) {
    const evm = evmQuestion(payload.authorization, payerKey)
    return evm && { ...base, evm }
  }
  if (network.startsWith('solana:')) {
    const feePayer = requirements.extra?.feePayer
    const solana = solanaQuestion(payload.transaction, typeof feePayer === 'string' ? feePayer : '')
    return solana && { ...base, solana }
  }
  return undefined
}

function evmQuestion(
  authorization: unknown,
  payerKey: ((address: string) => string) | undefined,
): SettlementQuestion['evm'] {
  if (typeof authorization !== 'object' || authorization === null) return undefined
  const { nonce, validBefore, from } = authorization as Record<string, unknown>
  if (typeof nonce !== 'string' || !NONCE.test(nonce)) return undefined
  // The SDK sends `validBefore` as a decimal string (a uint256); only a plausible epoch is kept.
  const seconds =
    typeof validBefore === 'string' && DECIMAL.test(validBefore) ? Number(validBefore) : Number.NaN
  if (!Number.isSafeInteger(seconds)) return undefined
  const key =
    payerKey && typeof from === 'string' && EVM_ADDRESS.test(from)
      ? { payerKey: payerKey(from.toLowerCase()) }
      : {}
  return { nonce: nonce.toLowerCase() as `0x${string}`, validBefore: seconds, ...key }
}

function solanaQuestion(transaction: unknown, feePayer: string): SettlementQuestion['solana'] {
  if (typeof transaction !== 'string') return undefined
  const tx = readWireTransaction(transaction)
  if (!tx) return undefined
  // A signer's address is its account key (the fee payer's slot comes first), in base58.
  const signed = tx.signatures.filter(
    (signature, i) =>
      isSigned(signature) && base58.decode(tx.accountKeys[i] as Uint8Array) !== feePayer,
  )
  // The `exact` scheme has exactly one: the payer's. Anything else is not a payment we can judge.
  if (signed.length !== 1) return undefined
  return {
    payerSignatureDigest: createHash('sha256')
      .update(signed[0] as Uint8Array)
      .digest('hex'),
    blockhash: base58.decode(tx.lifetimeToken),
  }
}

const base58 = getBase58Decoder()
