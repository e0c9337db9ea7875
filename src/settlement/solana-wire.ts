import { getBase64Encoder, getShortU16Decoder } from '@solana/kit'

/** A Solana wire transaction as laid out on the wire, its parts as views of the decoded bytes. */
export interface WireTransaction {
  /** The signature slots in order, 64 bytes each (all zeros for a signer that has not signed). */
  signatures: Uint8Array[]
  /** The compiled message: the bytes the signers signed. */
  message: Uint8Array
  /** The message's static account keys, 32 bytes each; the first `signatures.length` sign. */
  accountKeys: Uint8Array[]
  /** The message's lifetime token (its recent blockhash or durable nonce), 32 bytes. */
  lifetimeToken: Uint8Array
}

const base64 = getBase64Encoder()
const shortU16 = getShortU16Decoder()
/** Length of an Ed25519 signature, and of a Solana address, in bytes. */
const SIGNATURE_BYTES = 64
const KEY_BYTES = 32
/** The legacy message header: required signatures, read-only signed, read-only unsigned. */
const HEADER_BYTES = 3

/**
 * Reads a Base64 wire transaction as the Solana wire format lays it out: a compact-u16 count of
 * signatures and the 64-byte signatures, then the message (a version byte `0x80 | version` for a
 * versioned message; a header whose first byte, the number of required signatures, must equal the
 * count; a compact-u16 count of account keys and the keys; the 32-byte lifetime token). The same
 * checks as @solana/kit's `getTransactionDecoder` up to the lifetime token, without its decode of
 * every account address and instruction: the paid path reads a few fields of every payment, and
 * the full decode was the larger part of a Solana call's work on the main thread.
 *
 * @param wire - the transaction, Base64 (RFC 4648), bounded in size by the payment's shape check
 * @returns its parts, or undefined when it is not a wire transaction of version legacy or 0.
 *   Never throws.
 */
export function readWireTransaction(wire: string): WireTransaction | undefined {
  try {
    const bytes = base64.encode(wire) as Uint8Array
    const [count, offset] = shortU16.read(bytes, 0)
    // Every transaction has a fee payer, whose signature comes first.
    if (count < 1) return undefined
    const start = offset + count * SIGNATURE_BYTES
    if (start >= bytes.length) return undefined
    const message = bytes.subarray(start)
    const version = message[0] as number
    const versioned = (version & 0x80) !== 0
    // Version 0 is the only versioned message there is (MAX_SUPPORTED_TRANSACTION_VERSION).
    if (versioned && version !== 0x80) return undefined
    const header = versioned ? 1 : 0
    if (message[header] !== count) return undefined
    const [keys, keysAt] = shortU16.read(message, header + HEADER_BYTES)
    if (keys < count) return undefined
    const tokenAt = keysAt + keys * KEY_BYTES
    if (tokenAt + KEY_BYTES > message.length) return undefined
    const signatures: Uint8Array[] = []
    for (let at = offset; at < start; at += SIGNATURE_BYTES) {
      signatures.push(bytes.subarray(at, at + SIGNATURE_BYTES))
    }
    const accountKeys: Uint8Array[] = []
    for (let at = keysAt; at < tokenAt; at += KEY_BYTES) {
      accountKeys.push(message.subarray(at, at + KEY_BYTES))
    }
    return {
      signatures,
      message,
      accountKeys,
      lifetimeToken: message.subarray(tokenAt, tokenAt + KEY_BYTES),
    }
  } catch {
    return undefined
  }
}

/** True when a signature slot holds a signature (the wire writes an empty slot as zeros). */
export const isSigned = (signature: Uint8Array): boolean => signature.some((b) => b !== 0)
