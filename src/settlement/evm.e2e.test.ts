import { createHash } from 'node:crypto'
import { x402Client } from '@x402/core/client'
import { x402Facilitator } from '@x402/core/facilitator'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { ExactEvmScheme } from '@x402/evm/exact/client'
import { createPublicClient, type Hex, http, parseEventLogs } from 'viem'
import { privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevAccount } from '../devnet/anvil.js'
import { type EvmDevnet, startEvmDevnet } from '../devnet/evm.js'
import { registerDevEvmScheme } from '../devnet/evm-facilitator.js'
import { freePort } from '../devnet/ports.js'
import type { SignedUsdcTransfer } from '../devnet/usdc.js'
import { AUTHORIZATION_USED, createEvmJudge, TRANSFER } from './evm.js'
import { createSettlementJudge } from './index.js'
import { questionOf } from './question.js'
import type { SettlementJudge, SettlementQuestion } from './types.js'

// The EVM judge on anvil, against the official facilitator's settlements and the real
// FiatTokenV2_2 (its EIP-3009 events): no part of the chain is mocked.

let devnet: EvmDevnet
let facilitator: x402Facilitator
let requirements: PaymentRequirements
let judge: SettlementJudge
/** Questions of the first tests, judged again once the chain's clock has moved on. */
const earlier = {} as {
  landed: SettlementQuestion
  transaction: string
  canceled: SettlementQuestion
}

beforeAll(async () => {
  devnet = await startEvmDevnet({ payers: 4 })
  facilitator = new x402Facilitator()
  registerDevEvmScheme(facilitator, {
    rpcUrl: devnet.rpcUrl,
    privateKey: devnet.facilitatorPrivateKey,
  })
  requirements = {
    scheme: 'exact',
    network: devnet.network,
    amount: '1000',
    asset: devnet.usdcAddress,
    payTo: devnet.payTo,
    maxTimeoutSeconds: 60,
    extra: { ...devnet.usdcDomain },
  }
  judge = createEvmJudge({ rpcUrl: devnet.rpcUrl, networks: [devnet.network] })
})

afterAll(async () => {
  await devnet?.stop()
})

/** Signs an EIP-3009 authorization with the official client, as a buyer would. */
function pay(payer: DevAccount): Promise<PaymentPayload> {
  const client = new x402Client().register(
    devnet.network,
    new ExactEvmScheme(privateKeyToAccount(payer.privateKey)),
  )
  return client.createPaymentPayload({
    x402Version: 2,
    resource: { url: 'https://payload.tools/v1/hash' },
    accepts: [requirements],
  })
}

/** A payment's EIP-3009 authorization as signed, for the payer to execute itself. */
function signedOf(payment: PaymentPayload): SignedUsdcTransfer {
  const { authorization: a, signature } = payment.payload as {
    authorization: Record<'from' | 'to' | 'value' | 'validAfter' | 'validBefore' | 'nonce', string>
    signature: Hex
  }
  return {
    authorization: {
      from: a.from as Hex,
      to: a.to as Hex,
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce as Hex,
    },
    signature,
  }
}

function ask(payment: PaymentPayload): SettlementQuestion {
  const question = questionOf(payment, requirements)
  if (!question?.evm) throw new Error('no EVM question')
  return question
}

describe('EVM settlement judge (anvil, official facilitator)', () => {
  it('covers the networks it was given only', () => {
    expect(judge.covers(devnet.network)).toBe(true)
    expect(judge.covers('eip155:1')).toBe(false)
    expect(judge.covers('solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp')).toBe(false)
  })

  it('finds a settled payment: landed, with the transaction hash the facilitator returned', async () => {
    const payment = await pay(devnet.payers[0] as DevAccount)
    const settled = await facilitator.settle(payment, requirements)
    expect(settled.success).toBe(true)
    expect(settled.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    expect(await judge.judge(ask(payment))).toEqual({
      kind: 'landed',
      transaction: settled.transaction,
    })
    Object.assign(earlier, { landed: ask(payment), transaction: settled.transaction })
    // The combined judge sends it to the EVM judge.
    const combined = createSettlementJudge({ evmRpcUrl: devnet.rpcUrl, networks: [devnet.network] })
    expect(await combined.judge(ask(payment))).toEqual(await judge.judge(ask(payment)))
    // The same nonce asked for another amount or payTo: the transfer found is not that one.
    const other = { ...ask(payment), amount: '999' }
    expect((await judge.judge(other)).kind).toBe('undecided')
    const elsewhere = { ...ask(payment), payTo: devnet.facilitatorAddress }
    expect((await judge.judge(elsewhere)).kind).toBe('undecided')
  })

  it('finds an authorization the payer canceled: not_landed, canceled', async () => {
    const payer = devnet.payers[1] as DevAccount
    const payment = await pay(payer)
    const question = ask(payment)
    expect((await judge.judge(question)).kind).toBe('undecided')
    await devnet.cancelAuthorization(payer, question.evm?.nonce as Hex)
    expect(await judge.judge(question)).toEqual({ kind: 'not_landed', reason: 'canceled' })
    earlier.canceled = question
    // Bound to the payer by its keyed hash: the same question with another payer's key is not
    // this cancellation (a stranger cancelling their own authorization with our nonce).
    const key = (address: string) => createHash('sha256').update(`k:${address}`).digest('hex')
    const bound = createEvmJudge({
      rpcUrl: devnet.rpcUrl,
      networks: [devnet.network],
      payerKey: key,
    })
    const keyed = questionOf(payment, requirements, undefined, key)
    expect(keyed?.evm?.payerKey).toBe(key(payer.address.toLowerCase()))
    expect(JSON.stringify(keyed)).not.toContain(payer.address.slice(2).toLowerCase())
    expect(await bound.judge(keyed as SettlementQuestion)).toEqual({
      kind: 'not_landed',
      reason: 'canceled',
    })
    const stranger = { ...question, evm: { ...question.evm, payerKey: key('0x'.padEnd(42, '1')) } }
    expect((await bound.judge(stranger as SettlementQuestion)).kind).toBe('undecided')
    // And the facilitator can no longer settle it.
    const settled = await facilitator.settle(payment, requirements).catch(() => undefined)
    expect(settled?.success ?? false).toBe(false)
  })

  it('says undecided for an unused, still valid authorization', async () => {
    const question = ask(await pay(devnet.payers[2] as DevAccount))
    expect(await judge.judge(question)).toEqual({
      kind: 'undecided',
      why: 'unused and still valid',
    })
  })

  it('says undecided, without throwing, when the RPC is a closed port', async () => {
    const question = ask(await pay(devnet.payers[2] as DevAccount))
    const dead = createEvmJudge({
      rpcUrl: `http://127.0.0.1:${await freePort()}/secret-key`,
      networks: [devnet.network],
      timeoutMs: 1_000,
    })
    const verdict = await dead.judge(question)
    expect(verdict.kind).toBe('undecided')
    expect(JSON.stringify(verdict)).not.toContain('secret-key')
    expect(JSON.stringify(verdict)).not.toContain('127.0.0.1')
  })

  it('says undecided for a chain other than the question’s', async () => {
    const question = ask(await pay(devnet.payers[2] as DevAccount))
    const wrong = createEvmJudge({ rpcUrl: devnet.rpcUrl, networks: ['eip155:1'] })
    expect((await wrong.judge({ ...question, network: 'eip155:1' })).kind).toBe('undecided')
  })

  it('judges a used nonce by the transfer its own AuthorizationUsed came with, not by the other transfers of its transaction', async () => {
    const payer = devnet.payers[0] as DevAccount
    const elsewhere = devnet.payers[1]?.address as Hex
    const key = (address: string) => createHash('sha256').update(`k:${address}`).digest('hex')
    const bound = createEvmJudge({
      rpcUrl: devnet.rpcUrl,
      networks: [devnet.network],
      payerKey: key,
    })
    const [p1, p2] = [await pay(payer), await pay(payer)]
    const [q1, q2] = [p1, p2].map((p) => questionOf(p, requirements, undefined, key))
    // One transaction: P1's authorization as signed, and P2's nonce spent by a new authorization
    // of the payer's own, 1 unit to another address of its own.
    const a2 = (p2.payload as { authorization: { nonce: Hex; validBefore: string } }).authorization
    const hash = await devnet.executeTransfers(payer, [
      signedOf(p1),
      await devnet.signTransfer(payer, {
        to: elsewhere,
        value: 1n,
        validBefore: BigInt(a2.validBefore),
        nonce: a2.nonce,
      }),
    ])
    // The installed FiatTokenV2_2 emits each AuthorizationUsed right before its own Transfer.
    const receipt = await createPublicClient({
      transport: http(devnet.rpcUrl),
    }).getTransactionReceipt({ hash })
    const logs = parseEventLogs({ abi: [AUTHORIZATION_USED, TRANSFER], logs: receipt.logs })
    expect(logs.map((l) => [l.logIndex - (logs[0]?.logIndex ?? 0), l.eventName, l.args])).toEqual([
      [0, 'AuthorizationUsed', { authorizer: payer.address, nonce: q1?.evm?.nonce }],
      [1, 'Transfer', { from: payer.address, to: devnet.payTo, value: 1000n }],
      [2, 'AuthorizationUsed', { authorizer: payer.address, nonce: q2?.evm?.nonce }],
      [3, 'Transfer', { from: payer.address, to: elsewhere, value: 1n }],
    ])
    expect(await bound.judge(q1 as SettlementQuestion)).toEqual({
      kind: 'landed',
      transaction: hash,
    })
    // P2's nonce is the payer's and used: its own transfer paid someone else 1 unit, however the
    // transaction also paid the price to payTo. It can never land.
    expect(await bound.judge(q2 as SettlementQuestion)).toEqual({
      kind: 'not_landed',
      reason: 'nonce_used',
    })
    // Without the payer's keyed hash the authorizer could be a stranger: not ours, not decided.
    expect(await judge.judge(ask(p1))).toEqual({ kind: 'landed', transaction: hash })
    expect(await judge.judge(ask(p2))).toEqual({ kind: 'undecided', why: 'unused and still valid' })
  })

  it('ignores another address using the same nonce, even for the price to payTo', async () => {
    const payer = devnet.payers[2] as DevAccount
    const stranger = devnet.payers[0] as DevAccount
    const key = (address: string) => createHash('sha256').update(`k:${address}`).digest('hex')
    const bound = createEvmJudge({
      rpcUrl: devnet.rpcUrl,
      networks: [devnet.network],
      payerKey: key,
    })
    const payment = await pay(payer)
    const question = questionOf(payment, requirements, undefined, key) as SettlementQuestion
    const { nonce, validBefore } = question.evm as { nonce: Hex; validBefore: number }
    await devnet.executeTransfers(stranger, [
      await devnet.signTransfer(stranger, {
        to: devnet.payTo,
        value: 1000n,
        validBefore: BigInt(validBefore),
        nonce,
      }),
    ])
    expect(await bound.judge(question)).toEqual({
      kind: 'undecided',
      why: 'unused and still valid',
    })
    // The payer's own authorization still settles, and is then judged landed.
    const settled = await facilitator.settle(payment, requirements)
    expect(settled.success).toBe(true)
    expect(await bound.judge(question)).toEqual({
      kind: 'landed',
      transaction: settled.transaction,
    })
  })

  // Last: it moves the chain's clock past every authorization signed so far.
  it('finds an unused authorization past validBefore: not_landed, expired', async () => {
    const payment = await pay(devnet.payers[3] as DevAccount)
    const question = ask(payment)
    expect((await judge.judge(question)).kind).toBe('undecided')
    await devnet.increaseTime(120)
    expect(await judge.judge(question)).toEqual({ kind: 'not_landed', reason: 'expired' })
    // A lookback too short to reach back to when it could have landed cannot say so.
    const short = createEvmJudge({
      rpcUrl: devnet.rpcUrl,
      networks: [devnet.network],
      lookbackBlocks: 1n,
    })
    expect(await short.judge(question)).toEqual({
      kind: 'undecided',
      why: 'expired, but older than the lookback can tell',
    })
    // The landed and canceled ones keep their verdicts once expired.
    expect(await judge.judge(earlier.landed)).toEqual({
      kind: 'landed',
      transaction: earlier.transaction,
    })
    expect(await judge.judge(earlier.canceled)).toEqual({ kind: 'not_landed', reason: 'canceled' })
  })
})
