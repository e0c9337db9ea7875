import {
  generateKeyPairSigner,
  getBase58Decoder,
  getBase64Decoder,
  getBase64Encoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
} from '@solana/kit'
import { describe, expect, it } from 'vitest'
import { transferWire } from '../../test/helpers/solana-transfer.js'
import { isSigned, readWireTransaction } from './solana-wire.js'

// The oracle is @solana/kit's full decoder: the reader must find the same parts in the same bytes.

describe('readWireTransaction, as @solana/kit decodes the transaction', async () => {
  const [payer, feePayer, mint, hash] = await Promise.all([
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
  ])
  const signedWire = (version: 0 | 'legacy') =>
    transferWire(version, {
      payer,
      feePayer: feePayer.address,
      mint: mint.address,
      blockhash: hash.address,
    })
  const base58 = getBase58Decoder()

  it.each([0, 'legacy'] as const)(
    'reads the signatures, message, account keys and blockhash of a version %s transaction',
    async (version) => {
      const wire = await signedWire(version)
      const decoded = getTransactionDecoder().decode(getBase64Encoder().encode(wire))
      const compiled = getCompiledTransactionMessageDecoder().decode(decoded.messageBytes)
      const tx = readWireTransaction(wire)
      if (!tx) throw new Error('not read')
      expect(tx.message).toEqual(new Uint8Array(decoded.messageBytes))
      expect(tx.accountKeys.map((key) => base58.decode(key))).toEqual(compiled.staticAccounts)
      expect(base58.decode(tx.lifetimeToken)).toBe(hash.address)
      const slots = Object.entries(decoded.signatures)
      expect(tx.signatures).toHaveLength(slots.length)
      slots.forEach(([signer, signature], i) => {
        expect(base58.decode(tx.accountKeys[i] as Uint8Array)).toBe(signer)
        expect(isSigned(tx.signatures[i] as Uint8Array)).toBe(signature !== null)
        if (signature) expect(tx.signatures[i]).toEqual(new Uint8Array(signature))
      })
      expect(base58.decode(tx.accountKeys[0] as Uint8Array)).toBe(feePayer.address)
    },
  )

  it('reads nothing from a transaction cut before its blockhash ends, nor from garbage', async () => {
    const bytes = new Uint8Array(getBase64Encoder().encode(await signedWire(0)))
    const tx = readWireTransaction(getBase64Decoder().decode(bytes))
    if (!tx) throw new Error('not read')
    const tokenEnd = tx.lifetimeToken.byteOffset - bytes.byteOffset + 32
    for (let length = 0; length < tokenEnd; length++) {
      const cut = getBase64Decoder().decode(bytes.slice(0, length))
      expect(readWireTransaction(cut), `cut at ${length}`).toBeUndefined()
    }
    expect(readWireTransaction('not base64 at all!')).toBeUndefined()
    expect(readWireTransaction('')).toBeUndefined()
  })

  it("refuses a signature count that is not the header's, and a version other than 0", async () => {
    const bytes = new Uint8Array(getBase64Encoder().encode(await signedWire(0)))
    const fewer = new Uint8Array([1, ...bytes.subarray(1 + 64)])
    expect(() => getTransactionDecoder().decode(fewer)).toThrow()
    expect(readWireTransaction(getBase64Decoder().decode(fewer))).toBeUndefined()
    const v1 = new Uint8Array(bytes)
    v1[1 + 2 * 64] = 0x81
    expect(readWireTransaction(getBase64Decoder().decode(v1))).toBeUndefined()
  })
})
