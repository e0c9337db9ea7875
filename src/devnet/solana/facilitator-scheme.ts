import {
  createKeyPairSignerFromBytes,
  getAddressDecoder,
  type KeyPairSigner,
  type MessagePartialSigner,
  type TransactionPartialSigner,
} from '@solana/kit'
import type { x402Facilitator } from '@x402/core/facilitator'
import type { Network } from '@x402/core/types'
import { toFacilitatorSvmSigner } from '@x402/svm'
import { registerExactSvmScheme } from '@x402/svm/exact/facilitator'

/** Options of {@link registerDevSvmScheme}. */
export interface DevSvmSchemeOptions {
  /** JSON-RPC endpoint of the devnet (or any Solana RPC). */
  rpcUrl: string
  /** The fee payer's 64-byte Solana secret key (seed ‖ public key). */
  feePayerSecretKey: Uint8Array
  /** CAIP-2 network to register, e.g. `solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp`. */
  network: Network
}

/**
 * A kit `KeyPairSigner` whose address is known at once. Registration is synchronous but WebCrypto
 * imports keys asynchronously, so the signer is created now and awaited on first signature; the
 * address comes from the public half of the 64-byte key, and kit checks on import that it
 * matches the private half.
 */
function keyPairSignerFromBytesLazily(
  secretKey: Uint8Array,
): MessagePartialSigner & TransactionPartialSigner {
  if (secretKey.length !== 64) {
    throw new Error(`feePayerSecretKey must be 64 bytes, got ${secretKey.length}`)
  }
  const ready: Promise<KeyPairSigner> = createKeyPairSignerFromBytes(secretKey)
  // A bad key surfaces on the first signature; this only keeps the rejection from going unhandled.
  ready.catch(() => undefined)
  return {
    address: getAddressDecoder().decode(secretKey.subarray(32)),
    signMessages: async (messages, config) => (await ready).signMessages(messages, config),
    signTransactions: async (transactions, config) =>
      (await ready).signTransactions(transactions, config),
  }
}

/**
 * Registers the x402 SVM `exact` facilitator scheme (`@x402/svm`) on `facilitator` for `network`,
 * with the SDK's facilitator signer (`toFacilitatorSvmSigner`) holding the fee payer key and
 * talking to `rpcUrl`. Its `/supported` kind carries `extra.feePayer`, the fee payer's address.
 *
 * Dev and tests only: production loads the key from config the same way.
 *
 * @throws Error if `feePayerSecretKey` is not 64 bytes.
 * @example
 * const facilitator = new x402Facilitator()
 * registerDevSvmScheme(facilitator, {
 *   rpcUrl: devnet.rpcUrl,
 *   feePayerSecretKey: devnet.feePayer.secretKey,
 *   network: devnet.network,
 * })
 */
export function registerDevSvmScheme(
  facilitator: x402Facilitator,
  { rpcUrl, feePayerSecretKey, network }: DevSvmSchemeOptions,
): void {
  const signer = toFacilitatorSvmSigner(keyPairSignerFromBytesLazily(feePayerSecretKey), {
    defaultRpcUrl: rpcUrl,
  })
  registerExactSvmScheme(facilitator, { signer, networks: network })
}
