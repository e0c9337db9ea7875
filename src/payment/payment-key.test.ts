import { createHash } from 'node:crypto'
import {
  type Address,
  appendTransactionMessageInstructions,
  type Blockhash,
  createTransactionMessage,
  generateKeyPairSigner,
  getBase64Decoder,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayer,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit'
import { getTransferCheckedInstruction } from '@solana-program/token'
import type { PaymentRequirements } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { BASE_REQUIREMENTS } from '../../test/helpers/requirements.js'
import { transferWire } from '../../test/helpers/solana-transfer.js'
import { paymentIdentity as identityOf } from './payment-key.js'
import type { ShapedPayment } from './payment-shape.js'

// The identity of a payment names the authorization the payer signed, not its spelling
// (issue 16: re-cased or re-encoded copies of one authorization got keys of their own).

const evm = BASE_REQUIREMENTS

const authorization = {
  from: '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B',
  to: evm.payTo,
  value: '1000',
  validAfter: '0',
  validBefore: '1740672154',
  nonce: '0xF3746613C2D920B5FDABC0856F2AEB2D4F88EE6037B8CC5D04A71A4462F13480',
}
const signature = `0x${'AB'.repeat(65)}`

const payment = (payload: Record<string, unknown>) =>
  ({ x402Version: 2, accepted: evm, payload }) as unknown as ShapedPayment

/** The identity of a payment whose transaction decodes (throws otherwise). */
function paymentIdentity(...args: Parameters<typeof identityOf>) {
  const identity = identityOf(...args)
  if (!identity) throw new Error('no identity')
  return identity
}

describe('paymentIdentity, EVM exact (EIP-3009)', () => {
  const original = paymentIdentity(payment({ signature, authorization }), evm)

  it('names the authorization by network, asset, from and nonce: spelling changes nothing', () => {
    expect(original.key).toMatch(/^pay:[0-9a-f]{64}$/)
    const respelled = paymentIdentity(
      payment({
        authorization: {
          nonce: authorization.nonce.toLowerCase(),
          validBefore: authorization.validBefore,
          from: authorization.from.toLowerCase(),
          validAfter: authorization.validAfter,
          value: authorization.value,
          to: authorization.to.toUpperCase(),
        },
        signature: signature.toLowerCase(),
      }),
      evm,
    )
    expect(respelled).toEqual(original)
  })

  it('tells another nonce, another payer or another network apart', () => {
    const other = (a: Partial<typeof authorization>, r = evm) =>
      paymentIdentity(payment({ signature, authorization: { ...authorization, ...a } }), r).key
    expect(other({ nonce: `0x${'00'.repeat(32)}` })).not.toBe(original.key)
    expect(other({ from: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C' })).not.toBe(original.key)
    expect(other({}, { ...evm, network: 'eip155:84532' })).not.toBe(original.key)
  })

  it('keeps the signature apart as the proof: another signature is the same key, another proof', () => {
    const forged = paymentIdentity(
      payment({ signature: `0x${'00'.repeat(65)}`, authorization }),
      evm,
    )
    expect(forged.key).toBe(original.key)
    expect(forged.proof).not.toBe(original.proof)
  })
})

describe('paymentIdentity, Solana exact', async () => {
  const solana: PaymentRequirements = {
    ...evm,
    network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
    asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    payTo: '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4',
    extra: { feePayer: 'EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd' },
  }
  const [authority, feePayer, source, destination] = await Promise.all([
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
    generateKeyPairSigner(),
  ])
  const transfer = getTransferCheckedInstruction({
    source: source.address,
    mint: solana.asset as never,
    destination: destination.address,
    authority,
    amount: 1000n,
    decimals: 6,
  })
  const signed = await partiallySignTransactionMessageWithSigners(
    pipe(
      createTransactionMessage({ version: 0 }),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: destination.address as unknown as Blockhash, lastValidBlockHeight: 0n },
          m,
        ),
      (m) => setTransactionMessageFeePayer(feePayer.address, m),
      (m) => appendTransactionMessageInstructions([transfer], m),
    ),
  )
  const wire = getBase64EncodedWireTransaction(signed)
  const original = paymentIdentity(payment({ transaction: wire }), solana)

  it('names the transaction by the message the payer signed, whatever its Base64 spelling', () => {
    const bytes = getBase64Encoder().encode(wire)
    // The same bytes, Base64 without its padding: the decoder reads them alike.
    const unpadded = wire.replace(/=+$/, '')
    expect(getBase64Decoder().decode(bytes)).toBe(wire)
    expect(paymentIdentity(payment({ transaction: unpadded }), solana)).toEqual(original)
  })

  it('keeps the signatures apart as the proof', () => {
    const bytes = new Uint8Array(getBase64Encoder().encode(wire))
    const decoded = getTransactionDecoder().decode(bytes)
    expect(Object.values(decoded.signatures).filter(Boolean)).toHaveLength(1)
    // Zero the payer's signature (the first 64 bytes after the count): same message, new proof.
    const zeroed = new Uint8Array(bytes)
    zeroed.fill(0, 1 + 64, 1 + 128)
    zeroed.fill(0, 1, 65)
    const forged = paymentIdentity(
      payment({ transaction: getBase64Decoder().decode(zeroed) }),
      solana,
    )
    expect(forged.key).toBe(original.key)
    expect(forged.proof).not.toBe(original.proof)
  })
})

describe('paymentIdentity, Solana exact, as @solana/kit reads the transaction', async () => {
  const sha256 = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex')
  const network = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
  const requirements: PaymentRequirements = {
    ...evm,
    network,
    asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  }
  const [payer, feePayer] = await Promise.all([generateKeyPairSigner(), generateKeyPairSigner()])
  const wireOf = (version: 0 | 'legacy') =>
    transferWire(version, {
      payer,
      feePayer: feePayer.address,
      mint: requirements.asset as Address,
      blockhash: feePayer.address,
    })

  it.each([0, 'legacy'] as const)(
    'names a version %s transaction by the message and the signatures present, as the full decoder reads them',
    async (version) => {
      const wire = await wireOf(version)
      const decoded = getTransactionDecoder().decode(getBase64Encoder().encode(wire))
      const present = Object.values(decoded.signatures).filter((s) => s !== null)
      expect(present).toHaveLength(1)
      expect(paymentIdentity(payment({ transaction: wire }), requirements)).toEqual({
        key: `pay:${sha256(`svm|${network}|${sha256(new Uint8Array(decoded.messageBytes))}`)}`,
        proof: sha256(new Uint8Array(present[0] as Uint8Array)),
      })
    },
  )

  it("has no identity for a transaction whose signature count is not its header's, as the full decoder refuses it", async () => {
    const bytes = new Uint8Array(getBase64Encoder().encode(await wireOf(0)))
    // One signature fewer: the count byte says 1, the message header still requires 2.
    const cut = new Uint8Array([1, ...bytes.subarray(1 + 64)])
    const wire = getBase64Decoder().decode(cut)
    expect(() => getTransactionDecoder().decode(cut)).toThrow()
    expect(identityOf(payment({ transaction: wire }), requirements)).toBeUndefined()
  })

  it('has no identity for Base64 that is not a wire transaction', () => {
    expect(identityOf(payment({ transaction: 'AAAA' }), requirements)).toBeUndefined()
    expect(identityOf(payment({ transaction: '' }), requirements)).toBeUndefined()
  })
})

describe('paymentIdentity, channels (batch-settlement)', () => {
  const sha256 = (data: string) => createHash('sha256').update(data).digest('hex')
  const channel = { ...evm, scheme: 'batch-settlement' }
  const channelId = `0x${'AB'.repeat(32)}`
  const voucher = { channelId, maxClaimableAmount: '1000', signature: `0x${'CD'.repeat(65)}` }
  const deposit = (salt: string, signature: string) => ({
    type: 'deposit',
    channelConfig: {},
    voucher,
    deposit: {
      amount: '1000000',
      authorization: {
        erc3009Authorization: { validAfter: '0', validBefore: '1740672154', salt, signature },
      },
    },
  })
  const salt = `0x${'0F'.repeat(32)}`
  const signed = `0x${'EF'.repeat(65)}`
  const first = paymentIdentity(payment(deposit(salt, signed)), channel)

  it('names a voucher by network, channel id and cumulative amount; proof: its signature', () => {
    expect(
      paymentIdentity(payment({ type: 'voucher', channelConfig: {}, voucher }), channel),
    ).toEqual({
      key: `pay:${sha256(`voucher|eip155:8453|${channelId.toLowerCase()}|1000`)}`,
      proof: sha256(voucher.signature.toLowerCase()),
    })
  })

  it('names a deposit by its authorization (network, channel id, salt), not by its voucher', () => {
    expect(first).toEqual({
      key: `pay:${sha256(`deposit|eip155:8453|${channelId.toLowerCase()}|${salt.toLowerCase()}`)}`,
      proof: sha256(`${signed.toLowerCase()}|${voucher.signature.toLowerCase()}`),
    })
    // Signed again after a failure (another salt), with the same voucher: another payment.
    const again = paymentIdentity(payment(deposit(`0x${'1F'.repeat(32)}`, signed)), channel)
    expect(again.key).not.toBe(first.key)
    // The same authorization re-cased is the same payment; signed differently, another proof.
    expect(paymentIdentity(payment(deposit(salt.toLowerCase(), signed)), channel)).toEqual(first)
    const forged = paymentIdentity(payment(deposit(salt, `0x${'EE'.repeat(65)}`)), channel)
    expect(forged.key).toBe(first.key)
    expect(forged.proof).not.toBe(first.proof)
  })
})
