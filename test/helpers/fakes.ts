import { createHash } from 'node:crypto'
import type {
  PaymentPayload,
  PaymentRequirements,
  SettleResponse,
  SupportedResponse,
  VerifyResponse,
} from '@x402/core/types'
import { z } from 'zod'
import { createFacilitatorLink } from '../../src/facilitators/link.js'
import { createPaymentGate, type PaymentEvent } from '../../src/payment/gate.js'
import { createMemoryGuard, type SettlementGuard } from '../../src/payment/guard.js'
import { configuredRails } from '../../src/payment/rails.js'
import type { Receipts } from '../../src/receipts/index.js'
import { checkBody, readCheckReply, readFields, readVerdict } from '../../src/runner/check.js'
import { OverloadedError } from '../../src/runner/errors.js'
import { JsonResult } from '../../src/runner/json-result.js'
import { readMessages } from '../../src/runner/messages.js'
import {
  type Admission,
  checkTaskOf,
  type InputSource,
  type Lane,
  type ToolRunner,
} from '../../src/runner/runner.js'
import type { QuestionOf, SettlementJudge } from '../../src/settlement/types.js'
import type { SettlementLedger } from '../../src/telemetry/ledger.js'
import { type ToolDefinition, type ToolEnv, ToolError } from '../../src/tools/types.js'

// Test doubles for unit tests of our own adapters (gate, HTTP, MCP). End-to-end tests use the
// real SDK facilitator on local chains instead.

export const FAKE_SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
export const FAKE_FEE_PAYER = 'EwWqGE4ZFKLofuestmU4LDdK7XM1N4ALgdZccwYugwGd'

/** The rails of the fakes: both configured, EVM first. */
export const fakeRails = configuredRails({
  payToEvm: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
  payToSolana: '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4',
  usdcEvm: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
  usdcSolana: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
  solanaNetwork: FAKE_SOLANA,
  railOrder: ['evm', 'solana'],
})

/** A tiny tool: upper-cases `text` (at most 10 chars); refuses "boom" with a ToolError. */
export const echoTool: ToolDefinition<{ text: string }, { upper: string }> = {
  id: 'echo',
  path: '/echo',
  mcpName: 'payload_echo',
  operationId: 'echo',
  price: '1000',
  title: 'Echo',
  description: 'Upper-cases text.',
  input: z.object({ text: z.string().max(10) }).strict(),
  output: z.object({ upper: z.string() }),
  examples: [{ text: 'abc' }],
  limits: ['text: at most 10 characters'],
  check: () => {},
  run: ({ text }) => {
    if (text === 'boom') throw new ToolError('invalid_unicode', 'tool refused')
    return { upper: text.toUpperCase() }
  },
}

/**
 * A runner for unit tests of the adapters: checks inputs and runs `tool.run` on the calling
 * thread (the same `checkBody` the checker threads run), so that fake tools outside the catalogue
 * (the worker only knows the catalogue) can be paid for. Like the real one, it admits a call only
 * while fewer than `capacity` calls are running (a test may change `capacity` between calls);
 * `run` replaces how a call runs (e.g. to reject with ToolTimeoutError). `lanes` lists the lane
 * of every check and JSON-RPC read, in order (the real default lane is `free`); `refuse` (which a
 * test may set between calls) makes a lane fail them, as a full or slow lane does. End-to-end
 * tests use the real worker pool.
 */
export function inlineRunner(
  options: {
    capacity?: number
    run?: (tool: ToolDefinition, input: unknown, nowSeconds: number) => Promise<unknown>
  } = {},
): ToolRunner & {
  runs: number
  checks: number
  capacity: number
  lanes: Lane[]
  refuse: (lane: Lane) => Error | undefined
} {
  let running = 0
  const onLane = (lane: Lane) => {
    runner.lanes.push(lane)
    const refusal = runner.refuse(lane)
    if (refusal) throw refusal
  }
  // Counted and laned as a check of the real runner; `verdictOnly` as the real runner sends it.
  const checkOnce = (
    tool: ToolDefinition,
    source: InputSource,
    lane: Lane,
    verdictOnly: boolean,
  ) => {
    runner.checks++
    onLane(lane)
    return checkBody(new Map([[tool.id, tool]]), checkTaskOf(tool.id, source, verdictOnly))
  }
  const laneStatus = (lane: Lane) => ({
    checking: 0,
    started: runner.lanes.filter((l) => l === lane).length,
  })
  const runner = {
    runs: 0,
    checks: 0,
    capacity: options.capacity ?? 100,
    lanes: [] as Lane[],
    refuse: (_lane: Lane): Error | undefined => undefined,
    async check(tool: ToolDefinition, source: InputSource, lane: Lane = 'free') {
      return readCheckReply(checkOnce(tool, source, lane, false))
    },
    async verdict(tool: ToolDefinition, source: InputSource, lane: Lane = 'free') {
      return readVerdict(checkOnce(tool, source, lane, true))
    },
    async fields(body: Uint8Array, names: string[]) {
      return readFields({ kind: 'fields', body, names })
    },
    async messages(body: Uint8Array, lane: Lane) {
      onLane(lane)
      return readMessages(body)
    },
    admit(): Admission {
      if (running >= runner.capacity) throw new OverloadedError(2)
      return {
        async run(tool, checked, nowSeconds) {
          runner.runs++
          running++
          try {
            const input: unknown = JSON.parse(new TextDecoder().decode(checked.bytes))
            return JsonResult.of(
              options.run
                ? await options.run(tool, input, nowSeconds)
                : tool.run(input, { nowSeconds: () => nowSeconds }),
            )
          } finally {
            running--
          }
        },
      }
    },
    warm: async () => {},
    status: () => ({
      running,
      queued: 0,
      checking: 0,
      lanes: { paid: laneStatus('paid'), free: laneStatus('free') },
      capacity: runner.capacity,
    }),
    close: async () => {},
    options: {
      workers: 1,
      timeoutMs: 2000,
      queueLimit: Math.max(0, (options.capacity ?? 100) - 1),
    },
  }
  return runner
}

/** The payer address of {@link fakePayload}'s EVM authorizations. */
export const FAKE_PAYER = '0x857b06519E91e3A54538791bDbb0E22373e36b66'

/**
 * An `exact` payload for `accepted`, named by `nonce`: on EVM an EIP-3009 authorization of the
 * price to its payTo, valid for the next 50 s, with a signature that only looks like one; on
 * Solana a wire transaction (a fee payer's empty signature, the payer's, a message of two
 * required signatures, two account keys and the nonce's digest as its blockhash) that no chain
 * would take.
 */
export function fakePayload(accepted: PaymentRequirements, nonce: string): Record<string, unknown> {
  const digest = createHash('sha256').update(nonce).digest()
  labels.set(digest.toString('hex'), nonce)
  if (accepted.network.startsWith('eip155:')) {
    return {
      authorization: {
        from: FAKE_PAYER,
        to: accepted.payTo,
        value: accepted.amount,
        validAfter: '0',
        validBefore: String(Math.floor(Date.now() / 1000) + 50),
        nonce: `0x${digest.toString('hex')}`,
      },
      signature: `0x${digest.toString('hex').repeat(3).slice(0, 130)}`,
    }
  }
  const wire = Buffer.concat([
    Buffer.from([2]),
    Buffer.alloc(64),
    Buffer.concat([digest, digest]),
    Buffer.from([2, 0, 0, 2]),
    Buffer.alloc(32, 1),
    Buffer.alloc(32, 2),
    digest,
  ])
  return { transaction: wire.toString('base64') }
}

const labels = new Map<string, string>()

/** The `nonce` a {@link fakePayload} was made from (what a scripted facilitator may read). */
export function fakeNonceOf(payment: PaymentPayload): string | undefined {
  const payload = payment.payload as { authorization?: { nonce: string }; transaction?: string }
  const hex = payload.authorization
    ? payload.authorization.nonce.slice(2)
    : Buffer.from(payload.transaction ?? '', 'base64')
        .subarray(-32)
        .toString('hex')
  return labels.get(hex.toLowerCase())
}

/** Scripted facilitator answers; each defaults to success. */
export interface FacilitatorScript {
  supported?: () => Promise<SupportedResponse>
  verify?: (payload: PaymentPayload) => Promise<VerifyResponse>
  settle?: (payload: PaymentPayload) => Promise<SettleResponse>
}

/**
 * A payment gate over a scripted FacilitatorClient, with call counters and recorded events.
 *
 * @param script - overrides of the facilitator answers
 * @param supportedNetworks - CAIP-2 networks `/supported` lists
 * @param extra - the runner (an {@link inlineRunner} by default), `canSettle` and the tools' clock
 */
export function fakeGate(
  script: FacilitatorScript = {},
  supportedNetworks = ['eip155:8453', FAKE_SOLANA],
  extra: {
    runner?: ToolRunner
    canSettle?: () => boolean
    env?: ToolEnv
    /** The payments' clock, in epoch milliseconds (default `Date.now`). */
    now?: () => number
    guard?: SettlementGuard
    /** Signs receipts and offers (the gate has none without it). */
    receipts?: Receipts
    /** The settlement ledger, judge and question builder (issue 30); none by default. */
    ledger?: SettlementLedger
    judge?: SettlementJudge
    questionOf?: QuestionOf
    /** Also told of every payment event, after the recorded list (telemetry, in tests). */
    observer?: (event: PaymentEvent) => Promise<unknown>
  } = {},
) {
  const runner = extra.runner ?? inlineRunner()
  const calls = { supported: 0, verify: 0, settle: 0 }
  const client = {
    async getSupported(): Promise<SupportedResponse> {
      calls.supported++
      if (script.supported) return script.supported()
      return {
        kinds: supportedNetworks.map((network) => ({
          x402Version: 2,
          scheme: 'exact',
          network: network as `${string}:${string}`,
          ...(network.startsWith('solana') ? { extra: { feePayer: FAKE_FEE_PAYER } } : {}),
        })),
        extensions: [],
        signers: {},
      }
    },
    async verify(p: PaymentPayload): Promise<VerifyResponse> {
      calls.verify++
      return script.verify ? script.verify(p) : { isValid: true, payer: '0xPAYER' }
    },
    async settle(p: PaymentPayload, r: PaymentRequirements): Promise<SettleResponse> {
      calls.settle++
      if (script.settle) return script.settle(p)
      return { success: true, transaction: '0xtx', network: r.network, payer: '0xPAYER' }
    },
  }
  const link = createFacilitatorLink({
    url: 'http://fake',
    timeoutMs: 1000,
    rails: fakeRails,
    client,
    ...(extra.receipts ? { extensions: [extra.receipts.offerReceipt.extension] } : {}),
  })
  const events: PaymentEvent[] = []
  const gate = createPaymentGate({
    link,
    guard: extra.guard ?? createMemoryGuard(),
    runner,
    payerHash: (payer) => `hash:${payer.toLowerCase()}`,
    ...(extra.canSettle ? { canSettle: extra.canSettle } : {}),
    ...(extra.env ? { env: extra.env } : {}),
    ...(extra.now ? { now: extra.now } : {}),
    ...(extra.receipts ? { receipts: extra.receipts } : {}),
    ...(extra.ledger ? { ledger: extra.ledger } : {}),
    ...(extra.judge ? { judge: extra.judge } : {}),
    ...(extra.questionOf ? { questionOf: extra.questionOf } : {}),
    observer: async (e) => {
      events.push(e)
      await extra.observer?.(e)
    },
  })
  /**
   * A PaymentPayload accepted on rail `index` (0 = EVM, 1 = Solana), in the scheme's shape, named
   * by `nonce`: an EIP-3009 authorization with that nonce, or a wire transaction whose message
   * holds it (the scripted facilitator checks no signature).
   */
  const pay = async (
    index = 0,
    nonce = 'n1',
    price = '1000',
    extensions?: Record<string, unknown>,
  ): Promise<PaymentPayload> => {
    const state = await link.ready()
    const accepted = (await state.accepts(price))[index]
    if (!accepted) throw new Error('no rail')
    return {
      x402Version: 2,
      accepted,
      payload: fakePayload(accepted, nonce),
      ...(extensions ? { extensions } : {}),
    }
  }
  return { gate, link, calls, events, pay, runner }
}

export type { PaymentEvent }
