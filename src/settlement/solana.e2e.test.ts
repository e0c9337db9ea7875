import { createHash } from 'node:crypto'
import { createKeyPairSignerFromBytes } from '@solana/kit'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { ExactSvmScheme } from '@x402/svm/exact/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../devnet/ports.js'
import { registerDevSvmScheme } from '../devnet/solana/facilitator-scheme.js'
import { type DevKeypair, type SolanaDevnet, startSolanaDevnet } from '../devnet/solana/index.js'
import { questionOf } from './question.js'
import { createSolanaJudge } from './solana.js'
import type { SettlementJudge, SettlementQuestion } from './types.js'

// The Solana judge on litesvm behind the devnet's JSON-RPC, against the official facilitator's
// settlements: no part of the chain is mocked.

let devnet: SolanaDevnet
let facilitator: x402Facilitator
let requirements: PaymentRequirements
let judge: SettlementJudge

beforeAll(async () => {
  devnet = await startSolanaDevnet()
  facilitator = new x402Facilitator()
  registerDevSvmScheme(facilitator, {
    rpcUrl: devnet.rpcUrl,
    feePayerSecretKey: devnet.feePayer.secretKey,
    network: devnet.network,
  })
  requirements = {
    scheme: 'exact',
    network: devnet.network,
    amount: '1000',
    asset: devnet.usdcMint,
    payTo: devnet.payTo,
    maxTimeoutSeconds: 60,
    extra: { feePayer: devnet.feePayer.address },
  }
  judge = createSolanaJudge({ rpcUrl: devnet.rpcUrl, networks: [devnet.network] })
})

afterAll(async () => {
  await devnet?.stop()
})

/** A PaymentPayload built by the official x402 client for `payer`, RPC pointed at the devnet. */
async function pay(payer: DevKeypair): Promise<PaymentPayload> {
  const signer = await createKeyPairSignerFromBytes(payer.secretKey)
  const client = new x402Client().register(
    devnet.network,
    new ExactSvmScheme(signer, { rpcUrl: devnet.rpcUrl }),
  )
  return client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'http://localhost/v1/tools/hash', description: 'hash', mimeType: 'json' },
    accepts: [requirements],
  })
}

function ask(payment: PaymentPayload): SettlementQuestion {
  const question = questionOf(payment, requirements)
  if (!question?.solana) throw new Error('no Solana question')
  return question
}

/** Questions judged again after the blockhash expired. */
const earlier = {} as { landed: SettlementQuestion; transaction: string }
let unused: { payment: PaymentPayload; question: SettlementQuestion }

describe('Solana settlement judge (litesvm, official facilitator)', () => {
  it('covers the networks it was given only', () => {
    expect(judge.covers(devnet.network)).toBe(true)
    expect(judge.covers('eip155:8453')).toBe(false)
  })

  it('finds a settled payment: landed, with the facilitator’s transaction id', async () => {
    const payment = await pay(devnet.payers[0] as DevKeypair)
    const settled = await facilitator.settle(payment, requirements)
    expect(settled.success).toBe(true)
    const question = ask(payment)
    expect(await judge.judge(question)).toEqual({
      kind: 'landed',
      transaction: settled.transaction,
    })
    Object.assign(earlier, { landed: question, transaction: settled.transaction })
    // Another digest, with the same (still valid) blockhash: not that transaction.
    const other = createHash('sha256').update('another signature').digest('hex')
    const stranger = { ...question, solana: { ...question.solana, payerSignatureDigest: other } }
    expect(await judge.judge(stranger as SettlementQuestion)).toEqual({
      kind: 'undecided',
      why: 'not found, and its blockhash is still valid',
    })
  })

  it('never takes another transaction of the same payer paying payTo the price for the payment asked about', async () => {
    const payer = devnet.payers[0] as DevKeypair
    const [asked, other] = [await pay(payer), await pay(payer)]
    const settledOther = await facilitator.settle(other, requirements)
    expect(settledOther.success).toBe(true)
    expect(await judge.judge(ask(asked))).toEqual({
      kind: 'undecided',
      why: 'not found, and its blockhash is still valid',
    })
    // Its own transaction, once it lands.
    const settled = await facilitator.settle(asked, requirements)
    expect(settled.success).toBe(true)
    expect(settled.transaction).not.toBe(settledOther.transaction)
    expect(await judge.judge(ask(asked))).toEqual({
      kind: 'landed',
      transaction: settled.transaction,
    })
  })

  it('says undecided for an unused payment whose blockhash is still valid', async () => {
    const payment = await pay(devnet.payers[1] as DevKeypair)
    unused = { payment, question: ask(payment) }
    expect(unused.question.solana?.blockhash).toBe(devnet.svm.latestBlockhash())
    expect(await judge.judge(unused.question)).toEqual({
      kind: 'undecided',
      why: 'not found, and its blockhash is still valid',
    })
  })

  it('says undecided, without throwing, when the RPC is a closed port', async () => {
    const dead = createSolanaJudge({
      rpcUrl: `http://127.0.0.1:${await freePort()}/secret-key`,
      networks: [devnet.network],
      timeoutMs: 1_000,
    })
    const verdict = await dead.judge(unused.question)
    expect(verdict.kind).toBe('undecided')
    expect(JSON.stringify(verdict)).not.toContain('secret-key')
  })

  it('finds an unused payment whose blockhash expired: not_landed, expired', async () => {
    devnet.expireBlockhash()
    expect(devnet.svm.latestBlockhash()).not.toBe(unused.question.solana?.blockhash)
    expect(await judge.judge(unused.question)).toEqual({ kind: 'not_landed', reason: 'expired' })
    // It can indeed never land now.
    const settled = await facilitator
      .settle(unused.payment, requirements)
      .catch(() => ({ success: false }))
    expect(settled.success).toBe(false)
    expect(await devnet.usdcBalance(devnet.payers[1]?.address as never)).toBe(100_000_000n)
    expect(await judge.judge(unused.question)).toEqual({ kind: 'not_landed', reason: 'expired' })
    // The landed one stays landed.
    expect(await judge.judge(earlier.landed)).toEqual({
      kind: 'landed',
      transaction: earlier.transaction,
    })
  })

  it('reads back to presentedAt, however short its lookback', async () => {
    // Another payment lands after the first one: the first is no longer the newest.
    const later = await facilitator.settle(await pay(devnet.payers[2] as DevKeypair), requirements)
    expect(later.success).toBe(true)
    // A lookback already over (negative) reads one page only, as a question asked long after.
    const hurried = createSolanaJudge({
      rpcUrl: devnet.rpcUrl,
      networks: [devnet.network],
      signaturesPerPage: 1,
      lookbackSeconds: -60,
    })
    expect(await hurried.judge(earlier.landed)).toEqual({
      kind: 'landed',
      transaction: earlier.transaction,
    })
    // Without presentedAt it cannot tell: what the field is for.
    const { presentedAt: _, ...undated } = earlier.landed
    expect(await hurried.judge(undated)).toEqual({ kind: 'not_landed', reason: 'expired' })
  })

  it('does not say expired when its look cannot read back far enough', async () => {
    const narrow = createSolanaJudge({
      rpcUrl: devnet.rpcUrl,
      networks: [devnet.network],
      signaturesPerPage: 1,
      maxPages: 1,
    })
    expect(await narrow.judge(unused.question)).toEqual({
      kind: 'undecided',
      why: 'expired, but more transactions than a look reads',
    })
  })
})
