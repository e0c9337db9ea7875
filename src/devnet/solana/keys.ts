import { createHash, randomBytes } from 'node:crypto'
import {
  type Address,
  createKeyPairSignerFromPrivateKeyBytes,
  getAddressEncoder,
} from '@solana/kit'

/**
 * A Solana account key for the local devnet.
 *
 * `secretKey` is 64 bytes in Solana's keypair layout (32-byte Ed25519 seed, then the 32-byte
 * public key), the layout of `solana-keygen` files and of `createKeyPairSignerFromBytes`.
 */
export interface DevKeypair {
  /** Base58 public key. */
  address: Address
  /** 64 bytes: seed ‖ public key. */
  secretKey: Uint8Array
}

/**
 * Creates a devnet keypair: deterministic when `label` is given (SHA-256 of a fixed prefix and
 * the label is the seed, like anvil's well-known accounts), random otherwise.
 *
 * Deterministic keys are public knowledge: never fund them on a real cluster.
 *
 * @example
 * const feePayer = await createDevKeypair('default/fee-payer')
 * const signer = await createKeyPairSignerFromBytes(feePayer.secretKey)
 */
export async function createDevKeypair(label?: string): Promise<DevKeypair> {
  const seed =
    label === undefined
      ? randomBytes(32)
      : createHash('sha256').update(`payload-tools/solana-devnet/${label}`).digest()
  const signer = await createKeyPairSignerFromPrivateKeyBytes(seed)
  const secretKey = new Uint8Array(64)
  secretKey.set(seed, 0)
  secretKey.set(getAddressEncoder().encode(signer.address), 32)
  return { address: signer.address, secretKey }
}
