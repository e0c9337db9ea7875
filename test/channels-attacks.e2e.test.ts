import { createHash } from 'node:crypto'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired, PaymentRequirements } from '@x402/core/types'
import { computeChannelId, signVoucher } from '@x402/evm/batch-settlement/client'
import type { Channel } from '@x402/evm/batch-settlement/server'
import {
  type Address,
  createPublicClient,
  createTestClient,
  createWalletClient,
  type Hex,
  http,
  parseAbi,
} from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Channels } from '../src/channels/index.js'
import { BATCH_SETTLEMENT_ESCROW, batchSettlementAbi } from '../src/devnet/batch-settlement.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { escrowChannel, voucherPayer as payerOf, type VoucherPayer } from './helpers/channels.js'
import { parseExposition, total } from './helpers/metrics.js'
import { type RunningService, startService } from './helpers/service.js'

// The named attacks on prepaid channels (issue 38; docs/security.md, "Prepaid channels"), on the
// devnet with our escrow, the SDK's batch-settlement facilitator and the official client
// (`BatchSettlementEvmScheme` from @x402/evm/batch-settlement/client behind @x402/fetch), with
// vouchers signed by hand with the SDK's `signVoucher` where an honest client would not sign them.
// Each payer has a channel of its own; the minimum deposit is 0.01 USDC (ten calls) so that a
// voucher beyond the deposit is a few calls away. Oracles: the chain (USDC balances, the escrow's
// `channels` and `pendingWithdrawals`), the channel store, and the tool-run counter of /metrics.

/** The end of a voucher's `duplicate_settlement` message: the PaymentRequired is corrective. */
const BEHIND =
  ": its cumulative amount is behind the channel's; sign one on the channel's charged amount (its state is in the PaymentRequired)"

const PRICE = 1000n
const DEPOSIT = 10_000n
const TOKEN = 'channels-attacks-metrics-token-0123456789'
const MISMATCH = 'invalid_batch_settlement_evm_cumulative_amount_mismatch'
let stack: DevStack
let svc: RunningService
let channels: Channels
const reader = () => createPublicClient({ transport: http(stack.evm.rpcUrl) })

beforeAll(async () => {
  stack = await startDevStack({ payers: 10 })
  svc = await startService(
    stack,
    {
      EVM_RPC_URL: stack.evm.rpcUrl,
      BATCH_SETTLEMENT_MIN_DEPOSIT: '0.01',
      // Claims happen when a test asks (claimAndSettle) or when a withdrawal is seen.
      BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
      BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
      BATCH_SETTLEMENT_WITHDRAW_DELAY_S: '900',
      METRICS_TOKEN: TOKEN,
    },
    { channels: { surveyMs: 250 } },
  )
  const started = svc.service.channels
  if (!started?.status().offered) throw new Error('batch-settlement is not offered')
  channels = started
}, 120_000)
afterAll(async () => {
  await svc?.stop()
  await stack?.stop()
})

const voucherPayer = (index: number) => payerOf(stack, index)
type Payer = VoucherPayer

const body = (input: string) => JSON.stringify({ input })
const sha256 = (input: string) => createHash('sha256').update(input).digest('hex')

/** POST /hash through a payer's official client. */
const call = (payer: Payer, input: string) =>
  payer.fetch(`${svc.baseUrl}/hash`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: body(input),
  })

/** POST /hash with a PAYMENT-SIGNATURE header as given. */
const present = (header: string, input: string) =>
  fetch(`${svc.baseUrl}/hash`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'PAYMENT-SIGNATURE': header },
    body: body(input),
  })

/** A 200 whose result is the SHA-256 of `input` (the hash tool's answer, checked with node:crypto). */
async function expectAnswered(res: Response, input: string): Promise<unknown> {
  expect(res.status).toBe(200)
  const json = (await res.json()) as { ok: boolean; result: { hex: string } }
  expect(json.ok).toBe(true)
  expect(json.result.hex).toBe(sha256(input))
  return json
}

/** A refusal: its status, envelope and, on a 402, the PaymentRequired it carries. */
async function refusal(res: Response) {
  const json = (await res.json()) as { ok: boolean; code: string; error: string }
  const header = res.headers.get('payment-required')
  return {
    status: res.status,
    ok: json.ok,
    code: json.code,
    error: json.error,
    required: header ? decodePaymentRequiredHeader(header) : undefined,
  }
}

let unpaid: PaymentRequired | undefined
/** The unpaid 402 of /hash (the offer every payer signs against). */
async function offer(): Promise<PaymentRequired> {
  if (unpaid) return unpaid
  const res = await fetch(`${svc.baseUrl}/hash`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: body('offer'),
  })
  expect(res.status).toBe(402)
  unpaid = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '')
  return unpaid
}
async function channelOffer(): Promise<PaymentRequirements> {
  const found = (await offer()).accepts.find((a) => a.scheme === 'batch-settlement')
  if (!found) throw new Error('no batch-settlement offer')
  return found
}

/** The payer's channel id on this service (its config as the official client builds it). */
async function channelIdOf(payer: Payer): Promise<Hex> {
  const accepted = await channelOffer()
  return computeChannelId(payer.scheme.buildChannelConfig(accepted), accepted.network)
}

/**
 * A voucher payment as the official client would send it, with the voucher signed by hand for
 * `amount` (and its payload changed by `alter`, if given).
 */
async function handVoucher(
  payer: Payer,
  amount: bigint,
  alter: (payload: Record<string, unknown>) => Record<string, unknown> = (p) => p,
  signer = payer.signer,
): Promise<string> {
  const accepted = await channelOffer()
  const config = payer.scheme.buildChannelConfig(accepted)
  const channelId = computeChannelId(config, accepted.network)
  const voucher = await signVoucher(signer, channelId, amount.toString(), accepted.network)
  const base = await new x402HTTPClient(payer.client).createPaymentPayload(await offer())
  const payment: PaymentPayload = {
    ...base,
    accepted,
    payload: alter({ type: 'voucher', channelConfig: config, voucher }),
  }
  return new x402HTTPClient(payer.client).encodePaymentSignatureHeader(payment)[
    'PAYMENT-SIGNATURE'
  ] as string
}

/** The channel as the service's store has it. */
const stored = async (id: Hex): Promise<Channel | undefined> => channels.scheme.getStorage().get(id)

/** The channel's on-chain `balance` and `totalClaimed` in the escrow. */
const onChain = (id: Hex) => escrowChannel(stack, id)

/** Runs of the hash tool so far (`tool_run_duration_seconds_count`), replays included. */
async function hashRuns(): Promise<number> {
  const res = await fetch(`${svc.baseUrl}/metrics`, {
    headers: { Authorization: `Bearer ${TOKEN}` },
  })
  expect(res.status).toBe(200)
  return total(parseExposition(await res.text()), 'tool_run_duration_seconds_count', {
    tool: 'hash',
  })
}

const usdc = (address: Address) => stack.evm.usdcBalance(address)
const payTo = () => usdc(stack.evm.payTo)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function until(what: string, condition: () => Promise<boolean>, ms = 30_000) {
  const deadline = Date.now() + ms
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`)
    await sleep(50)
  }
}

/** `calls` calls through the official client, each answered: the first deposits. */
async function open(payer: Payer, calls: number, tag: string): Promise<void> {
  for (let i = 0; i < calls; i++)
    await expectAnswered(await call(payer, `${tag} ${i}`), `${tag} ${i}`)
}

const usdcAbi = parseAbi(['function transfer(address to, uint256 amount) returns (bool)'])
/** Moves `amount` atomic USDC from a payer to `to`, signed by the payer. */
async function transferUsdc(from: Payer, to: Address, amount: bigint): Promise<void> {
  const wallet = createWalletClient({ account: from.account, transport: http(stack.evm.rpcUrl) })
  const hash = await wallet.writeContract({
    chain: null,
    address: (await channelOffer()).asset as Address,
    abi: usdcAbi,
    functionName: 'transfer',
    args: [to, amount],
  })
  expect((await reader().waitForTransactionReceipt({ hash })).status).toBe('success')
}

/** Sends an escrow transaction as the payer (initiateWithdraw, finalizeWithdraw). */
async function asPayer(payer: Payer, functionName: string, args: readonly unknown[]) {
  const wallet = createWalletClient({ account: payer.account, transport: http(stack.evm.rpcUrl) })
  const hash = await wallet.writeContract({
    chain: null,
    address: BATCH_SETTLEMENT_ESCROW,
    abi: batchSettlementAbi,
    functionName,
    args,
  } as unknown as Parameters<typeof wallet.writeContract>[0])
  expect((await reader().waitForTransactionReceipt({ hash })).status).toBe('success')
}

/** Claims and settles everything the store holds unclaimed, so that a test starts from zero. */
async function flush(): Promise<void> {
  await channels.manager.claimAndSettle()
  expect(channels.manager.status().unclaimed).toBe('0')
}

describe('prepaid channels: the named attacks', () => {
  it('a voucher replayed: the same input is a replay within REPLAY_LIMIT, nothing charged again; another input is duplicate_settlement; the claim moves exactly the distinct vouchers', async () => {
    await flush()
    const payer = voucherPayer(0)
    const id = await channelIdOf(payer)
    const before = { payer: await usdc(payer.address), payTo: await payTo() }
    await open(payer, 3, 'replay')
    const header = payer.sent.at(-1) as string
    const runs = await hashRuns()
    // The same header and input: answered again, three times (REPLAY_LIMIT), each the same result.
    for (let i = 0; i < 3; i++) await expectAnswered(await present(header, 'replay 2'), 'replay 2')
    // Another input with it, then a fourth replay: refused, nothing run.
    expect(await refusal(await present(header, 'something else'))).toMatchObject({
      status: 402,
      ok: false,
      code: 'duplicate_settlement',
      error: `This voucher already paid for a different call (tool or input)${BEHIND}`,
    })
    expect(await refusal(await present(header, 'replay 2'))).toMatchObject({
      status: 402,
      code: 'duplicate_settlement',
      error: `This voucher was already answered 3 more times (REPLAY_LIMIT): its replays are used up${BEHIND}`,
    })
    expect(await hashRuns()).toBe(runs + 3)
    // Charged three prices, once each.
    expect((await stored(id))?.chargedCumulativeAmount).toBe(String(3n * PRICE))
    expect(await channels.manager.claimAndSettle()).toEqual({ claimed: 1, settled: true })
    expect(await onChain(id)).toEqual({ balance: DEPOSIT, totalClaimed: 3n * PRICE })
    expect(await payTo()).toBe(before.payTo + 3n * PRICE)
    expect(await usdc(payer.address)).toBe(before.payer - DEPOSIT)
  })

  it('a cumulative amount below what was charged: refused with the corrective 402 carrying the channel state, nothing run or charged; the official client goes on', async () => {
    const payer = voucherPayer(1)
    const id = await channelIdOf(payer)
    await open(payer, 3, 'below')
    const latest = await stored(id)
    expect(latest).toMatchObject({ chargedCumulativeAmount: '3000', signedMaxClaimable: '3000' })
    const runs = await hashRuns()
    const asked = { ...stack.facilitatorRequests }

    // A voucher for an amount it signed before (the second call's) is that payment: another input
    // is a duplicate, before the channel is even read.
    expect(
      await refusal(await present(await handVoucher(payer, 2n * PRICE), 'older')),
    ).toMatchObject({ status: 402, code: 'duplicate_settlement' })
    // A new amount below the charged one: the SDK's cumulative check, with the state to resync.
    const below = await refusal(await present(await handVoucher(payer, 3n * PRICE - 1n), 'below'))
    expect(below).toMatchObject({
      status: 402,
      code: 'payment_verification_failed',
      error: `The channel payment was rejected: ${MISMATCH}`,
    })
    expect(below.required?.error).toBe(MISMATCH)
    const corrective = below.required?.accepts.find((a) => a.scheme === 'batch-settlement')
    expect(corrective?.extra.channelState).toEqual({
      channelId: id,
      balance: String(DEPOSIT),
      totalClaimed: '0',
      withdrawRequestedAt: 0,
      refundNonce: '0',
      chargedCumulativeAmount: '3000',
    })
    expect(corrective?.extra.voucherState).toEqual({
      signedMaxClaimable: '3000',
      signature: latest?.signature,
    })
    // Nothing run, charged or asked of the facilitator; the channel is not held.
    expect(await hashRuns()).toBe(runs)
    expect(await stored(id)).toEqual(latest)
    expect(stack.facilitatorRequests.verify).toBe(asked.verify)
    expect(stack.facilitatorRequests.settle).toBe(asked.settle)
    await expectAnswered(await call(payer, 'after'), 'after')
    expect((await stored(id))?.chargedCumulativeAmount).toBe('4000')
  })

  it('a voucher for another payee, token or channel: refused before any SDK function (invalid_payment), or by the voucher check; nothing charged on either channel', async () => {
    const [mallory, victim] = [voucherPayer(2), voucherPayer(3)]
    const [own, theirs] = [await channelIdOf(mallory), await channelIdOf(victim)]
    await open(mallory, 1, 'mallory')
    await open(victim, 1, 'victim')
    const kept = { own: await stored(own), theirs: await stored(theirs) }
    const runs = await hashRuns()
    const asked = { ...stack.facilitatorRequests }
    const withConfig = (change: Record<string, unknown>) => (p: Record<string, unknown>) => ({
      ...p,
      channelConfig: { ...(p.channelConfig as object), ...change },
    })
    const invalid = (problem: string) => ({
      status: 402,
      ok: false,
      code: 'invalid_payment',
      error: `The payment is refused: ${problem}`,
    })
    // Mallory's own channel, but paid to herself, or in another token.
    expect(
      await refusal(
        await present(
          await handVoucher(mallory, 2n * PRICE, withConfig({ receiver: mallory.address })),
          'payee',
        ),
      ),
    ).toMatchObject(invalid('channelConfig.receiver is not the offered payTo'))
    expect(
      await refusal(
        await present(
          await handVoucher(
            mallory,
            2n * PRICE,
            withConfig({ token: '0x4200000000000000000000000000000000000006' }),
          ),
          'token',
        ),
      ),
    ).toMatchObject(invalid('channelConfig.token is not the offered asset'))
    // The victim's channel id under Mallory's config.
    expect(
      await refusal(
        await present(
          await handVoucher(mallory, 2n * PRICE, (p) => ({
            ...p,
            voucher: { ...(p.voucher as object), channelId: theirs },
          })),
          'their id',
        ),
      ),
    ).toMatchObject(invalid("voucher.channelId is not the channel config's id on this network"))
    // The victim's whole config and id, at the victim's next amount, signed by Mallory.
    const forged = await handVoucher(victim, 2n * PRICE, (p) => p, mallory.signer)
    const refused = await refusal(await present(forged, 'their channel'))
    expect(refused).toMatchObject({
      status: 402,
      code: 'payment_verification_failed',
      error: 'The channel payment was rejected: invalid_batch_settlement_evm_voucher_signature',
    })
    expect(refused.required?.error).toBe('invalid_batch_settlement_evm_voucher_signature')
    // Nothing ran, nothing moved, no facilitator request; neither channel is held.
    expect(await hashRuns()).toBe(runs)
    expect(stack.facilitatorRequests.verify).toBe(asked.verify)
    expect(stack.facilitatorRequests.settle).toBe(asked.settle)
    expect({ own: await stored(own), theirs: await stored(theirs) }).toEqual(kept)
    await expectAnswered(await call(victim, 'victim goes on'), 'victim goes on')
    expect((await stored(theirs))?.chargedCumulativeAmount).toBe('2000')
  })

  it('two calls at once on one channel: one answered, the other refused (duplicate_settlement), charged once; a call while the channel is held by a refund is refused channel_busy', async () => {
    const payer = voucherPayer(4)
    const id = await channelIdOf(payer)
    await open(payer, 1, 'race')
    const runs = await hashRuns()
    // The official client signs two calls before either is answered: both on the same amount.
    const official = new x402HTTPClient(payer.client)
    const payments = [
      await official.createPaymentPayload(await offer()),
      await official.createPaymentPayload(await offer()),
    ]
    const headers = payments.map(
      (p) => official.encodePaymentSignatureHeader(p)['PAYMENT-SIGNATURE'] as string,
    )
    expect(headers[1]).toBe(headers[0])
    const answers = await Promise.all([
      present(headers[0] as string, 'race a'),
      present(headers[1] as string, 'race b'),
    ])
    // The client reads both answers, as @x402/fetch does: the winner's moves its channel state.
    for (const [i, res] of answers.entries()) {
      await official.processPaymentResult(
        payments[i] as PaymentPayload,
        (name) => res.headers.get(name),
        res.status,
      )
    }
    expect(answers.map((r) => r.status).sort()).toEqual([200, 402])
    const won = answers.findIndex((r) => r.status === 200)
    await expectAnswered(answers[won] as Response, won === 0 ? 'race a' : 'race b')
    const lost = await refusal(answers[1 - won] as Response)
    expect(lost.code).toBe('duplicate_settlement')
    expect([
      `This voucher is being used for a different call (tool or input) right now${BEHIND}`,
      `This voucher already paid for a different call (tool or input)${BEHIND}`,
    ]).toContain(lost.error)
    expect(await hashRuns()).toBe(runs + 1)
    expect((await stored(id))?.chargedCumulativeAmount).toBe('2000')
    // The client waited for both answers: its next call is on the channel's current amount.
    await expectAnswered(await call(payer, 'race c'), 'race c')
    expect((await stored(id))?.chargedCumulativeAmount).toBe('3000')

    // The payer's refund holds the channel while its transaction is sent: a call meanwhile is the
    // SDK's channel_busy, nothing run or charged; the refund returns exactly the unclaimed rest.
    const facilitator = stack.facilitators[0]
    if (!facilitator) throw new Error('no facilitator')
    const before = await usdc(payer.address)
    facilitator.faults.settleDelayMs = 2_000
    const refunding = payer.scheme.refund(`${svc.baseUrl}/hash`)
    try {
      await until('the refund holds the channel', async () =>
        Boolean((await stored(id))?.pendingRequest),
      )
      const busyRuns = await hashRuns()
      const busy = await refusal(await present(await handVoucher(payer, 4n * PRICE), 'race d'))
      expect(busy).toMatchObject({
        status: 402,
        code: 'payment_verification_failed',
        error: 'The channel payment was rejected: invalid_batch_settlement_evm_channel_busy',
      })
      expect(await hashRuns()).toBe(busyRuns)
    } finally {
      facilitator.faults.settleDelayMs = 0
    }
    expect((await refunding).success).toBe(true)
    expect(await usdc(payer.address)).toBe(before + DEPOSIT - 3n * PRICE)
    expect(await onChain(id)).toEqual({ balance: 3n * PRICE, totalClaimed: 3n * PRICE })
  })

  it('a deposit that does not land (the payer empties its wallet between verify and settle): no result, nothing charged, the channel not credited, a later voucher on it refused; the payer then opens it', async () => {
    await flush()
    const payer = voucherPayer(5)
    // The sink holds no ETH (dev account 10): it gets some to send the USDC back.
    const sink = voucherPayer(8)
    await createTestClient({ mode: 'anvil', transport: http(stack.evm.rpcUrl) }).setBalance({
      address: sink.address,
      value: 10n ** 18n,
    })
    const id = await channelIdOf(payer)
    const facilitator = stack.facilitators[0]
    if (!facilitator) throw new Error('no facilitator')
    const held = await usdc(payer.address)
    const before = { sink: await usdc(sink.address), payTo: await payTo() }
    facilitator.faults.beforeNextSettle = () => transferUsdc(payer, sink.address, held)
    const res = await call(payer, 'deposit')
    const failed = await refusal(res.clone())
    expect(failed).toMatchObject({ status: 402, ok: false, code: 'settlement_failed' })
    const settlement = decodePaymentResponseHeader(res.headers.get('payment-response') ?? '')
    expect(failed.error).toBe(
      'Settlement failed: invalid_batch_settlement_evm_insufficient_balance; the result is withheld',
    )
    expect(settlement).toEqual({
      success: false,
      errorReason: 'invalid_batch_settlement_evm_insufficient_balance',
      transaction: '',
      network: stack.evm.network,
    })
    expect(facilitator.faults.beforeNextSettle).toBeUndefined()
    // Nothing moved into the escrow; the store holds no channel for it.
    expect(await usdc(payer.address)).toBe(0n)
    expect(await usdc(sink.address)).toBe(before.sink + held)
    expect(await onChain(id)).toEqual({ balance: 0n, totalClaimed: 0n })
    const notCredited = await stored(id)
    expect(notCredited).toMatchObject({ balance: '0', chargedCumulativeAmount: '0' })
    expect(notCredited?.pendingRequest).toBeUndefined()
    // Vouchers on the channel that never opened: refused, nothing run.
    const runs = await hashRuns()
    const refusedAs = (reason: string) => ({
      status: 402,
      code: 'payment_verification_failed',
      error: `The channel payment was rejected: ${reason}`,
    })
    expect(await refusal(await present(await handVoucher(payer, PRICE), 'later'))).toMatchObject(
      refusedAs('invalid_batch_settlement_evm_cumulative_exceeds_balance'),
    )
    const ahead = await refusal(await present(await handVoucher(payer, 2n * PRICE), 'later'))
    expect(ahead).toMatchObject(refusedAs(MISMATCH))
    expect(
      ahead.required?.accepts.find((a) => a.scheme === 'batch-settlement')?.extra.channelState,
    ).toMatchObject({ balance: '0', chargedCumulativeAmount: '0' })
    expect(await hashRuns()).toBe(runs)
    expect(await stored(id)).toEqual(notCredited)
    expect(await channels.manager.claimAndSettle()).toEqual({ claimed: 0, settled: false })
    expect(await payTo()).toBe(before.payTo)

    // With its money back, the payer's official client deposits again and is answered.
    await transferUsdc(sink, payer.address, held)
    await expectAnswered(await call(payer, 'deposit again'), 'deposit again')
    expect(await onChain(id)).toEqual({ balance: DEPOSIT, totalClaimed: 0n })
    expect((await stored(id))?.chargedCumulativeAmount).toBe('1000')
    expect(await usdc(payer.address)).toBe(held - DEPOSIT)
  })

  it('a deposit whose settle fails at the facilitator (500 before broadcast): 503 settlement_unknown, no result, nothing moved or charged; the same deposit sent again is verified afresh and answered; the client resyncs', async () => {
    const payer = voucherPayer(8)
    const id = await channelIdOf(payer)
    const facilitator = stack.facilitators[0]
    if (!facilitator) throw new Error('no facilitator')
    const held = await usdc(payer.address)
    facilitator.faults.settleFailures = 1
    const res = await call(payer, 'in doubt')
    expect(facilitator.faults.settleFailures).toBe(0)
    expect(await refusal(res)).toMatchObject({
      status: 503,
      code: 'settlement_unknown',
      error:
        'The deposit was sent, but its outcome is unknown: nothing was charged and the result is withheld. Pay again: a deposit that landed stays in your channel',
    })
    expect(await usdc(payer.address)).toBe(held)
    expect(await onChain(id)).toEqual({ balance: 0n, totalClaimed: 0n })
    expect(await stored(id)).toMatchObject({ balance: '0', chargedCumulativeAmount: '0' })
    // The very deposit again: verified, settled, credited and charged once.
    const deposit = payer.sent.at(-1) as string
    await expectAnswered(await present(deposit, 'in doubt'), 'in doubt')
    expect(await usdc(payer.address)).toBe(held - DEPOSIT)
    expect(await onChain(id)).toEqual({ balance: DEPOSIT, totalClaimed: 0n })
    expect(await stored(id)).toMatchObject({ balance: '10000', chargedCumulativeAmount: '1000' })
    // The official client saw only the 503: it signs from the chain's state, is told the
    // channel's (the corrective 402), and goes on.
    await expectAnswered(await call(payer, 'next'), 'next')
    expect(await stored(id)).toMatchObject({ balance: '10000', chargedCumulativeAmount: '2000' })
    expect(await usdc(payer.address)).toBe(held - DEPOSIT)
  })

  it('a deposit that lands with its answer lost: 503 settlement_unknown, no result, nothing charged; the same deposit again is refused on chain; the client deposits again and is answered, both deposits in its channel', async () => {
    const payer = voucherPayer(9)
    const id = await channelIdOf(payer)
    const facilitator = stack.facilitators[0]
    if (!facilitator) throw new Error('no facilitator')
    const held = await usdc(payer.address)
    facilitator.faults.loseNextSettleAnswers = 1
    expect(await refusal(await call(payer, 'lost'))).toMatchObject({
      status: 503,
      code: 'settlement_unknown',
    })
    expect(facilitator.faults.loseNextSettleAnswers).toBe(0)
    // Landed, but neither credited nor charged in the store.
    expect(await onChain(id)).toEqual({ balance: DEPOSIT, totalClaimed: 0n })
    expect(await stored(id)).toMatchObject({ balance: '0', chargedCumulativeAmount: '0' })
    const runs = await hashRuns()
    expect(await refusal(await present(payer.sent.at(-1) as string, 'lost'))).toMatchObject({
      status: 402,
      code: 'payment_verification_failed',
      error:
        'The channel payment was rejected: invalid_batch_settlement_evm_deposit_simulation_failed',
    })
    expect(await hashRuns()).toBe(runs)
    await expectAnswered(await call(payer, 'next'), 'next')
    expect(await onChain(id)).toEqual({ balance: 2n * DEPOSIT, totalClaimed: 0n })
    expect(await stored(id)).toMatchObject({ balance: '20000', chargedCumulativeAmount: '1000' })
    expect(await usdc(payer.address)).toBe(held - 2n * DEPOSIT)
  })

  it('a voucher beyond the deposit: refused (cumulative exceeds balance), nothing run or charged; the official client tops up instead', async () => {
    const payer = voucherPayer(7)
    const id = await channelIdOf(payer)
    await open(payer, 10, 'beyond')
    expect(await stored(id)).toMatchObject({ chargedCumulativeAmount: '10000', balance: '10000' })
    const runs = await hashRuns()
    const refused = await refusal(await present(await handVoucher(payer, 11n * PRICE), 'beyond'))
    expect(refused).toMatchObject({
      status: 402,
      code: 'payment_verification_failed',
      error:
        'The channel payment was rejected: invalid_batch_settlement_evm_cumulative_exceeds_balance',
    })
    expect(await hashRuns()).toBe(runs)
    expect((await stored(id))?.chargedCumulativeAmount).toBe('10000')
    const before = await usdc(payer.address)
    const topUp = await call(payer, 'top up')
    await expectAnswered(topUp, 'top up')
    expect(await usdc(payer.address)).toBe(before - DEPOSIT)
    expect(await onChain(id)).toEqual({ balance: 2n * DEPOSIT, totalClaimed: 0n })
    expect((await stored(id))?.chargedCumulativeAmount).toBe('11000')
  })

  // Last: it moves the chain's clock 900 s ahead, past every later authorization's validBefore.
  it('a payer who starts a withdrawal and keeps calling: the manager claims at once, payTo receives all charged, and finalizeWithdraw after the delay returns exactly the unclaimed rest', async () => {
    await flush()
    const payer = voucherPayer(6)
    const id = await channelIdOf(payer)
    const before = { payer: await usdc(payer.address), payTo: await payTo() }
    await open(payer, 3, 'withdraw')
    const config = payer.scheme.buildChannelConfig(await channelOffer())
    await asPayer(payer, 'initiateWithdraw', [config, DEPOSIT])
    const started = Date.now()
    // Claimed within the survey period, long before the 900 s delay.
    await until('the claim of the withdrawing channel', async () => {
      return (
        (await onChain(id)).totalClaimed === 3n * PRICE &&
        (await payTo()) === before.payTo + 3n * PRICE
      )
    })
    expect(Date.now() - started).toBeLessThan(60_000)
    // The payer keeps calling; each voucher is claimed as the survey sees it.
    await open(payer, 2, 'withdrawing')
    await until('the claim of the later vouchers', async () => {
      return (
        (await onChain(id)).totalClaimed === 5n * PRICE &&
        (await payTo()) === before.payTo + 5n * PRICE
      )
    })
    await until('the survey seeing nothing unclaimed', async () => {
      return channels.manager.status().unclaimed === '0'
    })
    await stack.evm.increaseTime(900)
    await asPayer(payer, 'finalizeWithdraw', [config])
    expect(await usdc(payer.address)).toBe(before.payer - 5n * PRICE)
    expect(await onChain(id)).toEqual({ balance: 5n * PRICE, totalClaimed: 5n * PRICE })
    expect(await payTo()).toBe(before.payTo + 5n * PRICE)
  })
})
