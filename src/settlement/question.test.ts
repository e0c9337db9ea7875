import { createHash } from 'node:crypto'
import {
  appendTransactionMessageInstructions,
  type Blockhash,
  createKeyPairSignerFromBytes,
  createNoopSigner,
  createTransactionMessage,
  getBase64EncodedWireTransaction,
  getBase64Encoder,
  getTransactionDecoder,
  partiallySignTransactionMessageWithSigners,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
} from '@solana/kit'
import { findAssociatedTokenPda, getTransferCheckedInstruction } from '@solana-program/token'
import { x402Client } from '@x402/core/client'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { privateKeyToAccount } from 'viem/accounts'
import { describe, expect, it } from 'vitest'
import { BASE_REQUIREMENTS, SOLANA_REQUIREMENTS } from '../../test/helpers/requirements.js'
import { devAccount } from '../devnet/anvil.js'
import { createDevKeypair } from '../devnet/solana/keys.js'
import { questionOf } from './question.js'

// Vectors signed here with the payers' real keys: the EVM one by the SDK's client scheme (EIP-712
// signing is local), the Solana one built with @solana/kit as the SDK's client builds it (the
// SDK's client would read the mint and a blockhash over RPC, which a unit test may not open).

const resource = { url: 'http://localhost/v1/tools/hash', description: 'hash', mimeType: 'json' }

describe('questionOf, EVM exact (EIP-3009)', async () => {
  const payer = devAccount(2)
  const client = new x402Client().register(
    'eip155:8453',
    new ExactEvmScheme(privateKeyToAccount(payer.privateKey)),
  )
  const payment = await client.createPaymentPayload({
    x402Version: 2,
    resource,
    accepts: [BASE_REQUIREMENTS],
  })
  const authorization = (payment.payload as { authorization: Record<string, string> }).authorization

  it('asks by the authorization nonce and validBefore, on the requirements rail', () => {
    const question = questionOf(payment, BASE_REQUIREMENTS, 1_750_000_000)
    expect(question).toEqual({
      network: 'eip155:8453',
      presentedAt: 1_750_000_000,
      asset: BASE_REQUIREMENTS.asset,
      payTo: BASE_REQUIREMENTS.payTo,
      amount: '1000',
      evm: {
        nonce: authorization.nonce?.toLowerCase(),
        validBefore: Number(authorization.validBefore),
      },
    })
    expect(question?.evm?.nonce).toMatch(/^0x[0-9a-f]{64}$/)
    // The SDK signs `validBefore = now + maxTimeoutSeconds`.
    expect(Math.abs((question?.evm?.validBefore ?? 0) - (Date.now() / 1000 + 60))).toBeLessThan(10)
  })

  it('is presented now unless told when', () => {
    const now = Date.now() / 1000
    expect(Math.abs((questionOf(payment, BASE_REQUIREMENTS)?.presentedAt ?? 0) - now)).toBeLessThan(
      5,
    )
  })

  it('keeps no payer address or signature', () => {
    const json = JSON.stringify(questionOf(payment, BASE_REQUIREMENTS)).toLowerCase()
    expect(json).not.toContain(payer.address.toLowerCase().slice(2))
    expect(json).not.toContain(
      String((payment.payload as { signature: string }).signature)
        .toLowerCase()
        .slice(2, 40),
    )
  })

  it('reads nothing it cannot: bad nonce, missing validBefore, another scheme or rail', () => {
    const altered = (a: Record<string, unknown>): PaymentPayload => ({
      ...payment,
      payload: { ...payment.payload, authorization: { ...authorization, ...a } },
    })
    expect(questionOf(altered({ nonce: '0x1234' }), BASE_REQUIREMENTS)).toBeUndefined()
    expect(questionOf(altered({ validBefore: undefined }), BASE_REQUIREMENTS)).toBeUndefined()
    expect(questionOf(altered({ validBefore: '-1' }), BASE_REQUIREMENTS)).toBeUndefined()
    expect(questionOf(altered({ validBefore: '9'.repeat(30) }), BASE_REQUIREMENTS)).toBeUndefined()
    expect(questionOf(payment, { ...BASE_REQUIREMENTS, scheme: 'upto' })).toBeUndefined()
    expect(questionOf(payment, { ...BASE_REQUIREMENTS, network: 'cosmos:x' })).toBeUndefined()
    // An EVM authorization presented on the Solana rail has no transaction to read.
    expect(questionOf(payment, SOLANA_REQUIREMENTS)).toBeUndefined()
  })
})

describe('questionOf, Solana exact', async () => {
  const payer = await createDevKeypair('default/payer-0')
  const feePayer = await createDevKeypair('default/fee-payer')
  const requirements: PaymentRequirements = {
    ...SOLANA_REQUIREMENTS,
    extra: { feePayer: feePayer.address },
  }
  const blockhash = 'GHtXQBsoZHVnNFa9YevAzFr17DJjgHXk3ycTKD5xD3Zi' as Blockhash
  const authority = await createKeyPairSignerFromBytes(payer.secretKey)
  const mint = requirements.asset as never
  const [[source], [destination]] = await Promise.all([
    findAssociatedTokenPda({ owner: payer.address, mint, tokenProgram: TOKEN_PROGRAM }),
    findAssociatedTokenPda({
      owner: requirements.payTo as never,
      mint,
      tokenProgram: TOKEN_PROGRAM,
    }),
  ])
  const signed = await partiallySignTransactionMessageWithSigners(
    pipe(
      createTransactionMessage({ version: 0 }),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash({ blockhash, lastValidBlockHeight: 0n }, m),
      // The facilitator signs last: its slot stays empty in what the payer sends.
      (m) => setTransactionMessageFeePayerSigner(createNoopSigner(feePayer.address), m),
      (m) =>
        appendTransactionMessageInstructions(
          [
            getTransferCheckedInstruction({
              source,
              mint,
              destination,
              authority,
              amount: 1000n,
              decimals: 6,
            }),
          ],
          m,
        ),
    ),
  )
  const transaction = getBase64EncodedWireTransaction(signed)
  const payment: PaymentPayload = {
    x402Version: 2,
    resource,
    accepted: requirements,
    payload: { transaction },
  }
  const payerSignature = signed.signatures[payer.address] as Uint8Array

  it('asks by the blockhash and the SHA-256 of the payer signature', () => {
    expect(payerSignature).toHaveLength(64)
    expect(signed.signatures[feePayer.address]).toBeNull()
    expect(questionOf(payment, requirements, 1_750_000_000)).toEqual({
      network: requirements.network,
      presentedAt: 1_750_000_000,
      asset: requirements.asset,
      payTo: requirements.payTo,
      amount: '1000',
      solana: {
        payerSignatureDigest: createHash('sha256').update(payerSignature).digest('hex'),
        blockhash,
      },
    })
  })

  it('keeps no payer address, no signature and no transaction', () => {
    const json = JSON.stringify(questionOf(payment, requirements))
    expect(json).not.toContain(payer.address)
    expect(json).not.toContain(Buffer.from(payerSignature).toString('hex'))
    expect(json).not.toContain(Buffer.from(payerSignature).toString('base64').slice(0, 20))
    expect(json).not.toContain(transaction.slice(0, 40))
  })

  it('reads nothing it cannot: garbage, no payer signature, a second signer', async () => {
    const other = (tx: string) =>
      questionOf({ ...payment, payload: { transaction: tx } }, requirements)
    expect(other('not base64 at all!')).toBeUndefined()
    expect(other(transaction.slice(0, 60))).toBeUndefined()
    // The payer's signature zeroed (bytes 1+64…1+128, after the count and the fee payer's slot).
    const bytes = new Uint8Array(getBase64Encoder().encode(transaction))
    const zeroed = new Uint8Array(bytes)
    zeroed.fill(0, 65, 129)
    expect(getTransactionDecoder().decode(zeroed).signatures[payer.address]).toBeNull()
    expect(other(Buffer.from(zeroed).toString('base64'))).toBeUndefined()
    // The fee payer's slot filled: still the payer's signature, unless the requirements name
    // another fee payer (two signers look like payers: not an `exact` payment we can judge).
    const filled = Buffer.from(bytes).fill(7, 1, 65).toString('base64')
    expect(other(filled)?.solana).toEqual(questionOf(payment, requirements)?.solana)
    const elsewhere = { ...requirements, extra: SOLANA_REQUIREMENTS.extra }
    expect(questionOf({ ...payment, payload: { transaction: filled } }, elsewhere)).toBeUndefined()
    expect(
      questionOf(payment, { ...requirements, extra: { feePayer: payer.address } }),
    ).toBeUndefined()
  })
})

const TOKEN_PROGRAM = 'TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA' as never
