import { createHash } from 'node:crypto'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired, SettleResponse } from '@x402/core/types'
import {
  appendPaymentIdentifierToExtensions,
  generatePaymentId,
} from '@x402/extensions/payment-identifier'
import { wrapFetchWithPayment } from '@x402/fetch'
import { decodeJwt } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PrivateRedis, startPrivateRedis } from '../src/devnet/redis.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import type { ToolEnv } from '../src/tools/types.js'
import { payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type RunningService, startService } from './helpers/service.js'

// Idempotent paid calls across two instances sharing a Redis guard, on the devnet (anvil,
// litesvm, the official facilitator), with the official x402 client and the official
// payment-identifier extension. A replay is observed, not assumed: payTo's balance on chain rises
// exactly once, the facilitator's /verify and /settle counters do not move, and telemetry sees one
// paid call.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
const PRICE = 1000n
let stack: DevStack
let redis: PrivateRedis
let a: RunningService
let b: RunningService
const events: PaymentEvent[] = []

beforeAll(async () => {
  redis = await startPrivateRedis()
  stack = await startDevStack({ payers: 2 })
  // Instances share the salt of the payers' keyed hashes, as every instance must. Redis commands
  // get 1.5 s: on a loaded machine a round trip can take hundreds of milliseconds, and a guard that
  // timed out would answer 503 guard_unavailable. FACILITATOR_TIMEOUT_MS 3 s keeps the paid-call
  // budget (the check, 6 × 1.5 s of guard commands, verify, settle and its retry, the tool) within
  // 30 s.
  const env = {
    REDIS_URL: redis.url,
    REDIS_TIMEOUT_MS: '1500',
    FACILITATOR_TIMEOUT_MS: '3000',
    TELEMETRY_SALT: 'idempotency-e2e-shared-salt',
  }
  const overrides = {
    env: clock,
    observer: async (e: PaymentEvent) => {
      events.push(e)
    },
  }
  a = await startService(stack, env, overrides)
  b = await startService(stack, env, overrides)
}, 120_000)
afterAll(async () => {
  await a?.stop()
  await b?.stop()
  await stack?.stop()
  await redis?.destroy()
})

const post = (svc: RunningService, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${svc.baseUrl}/hash`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

/** The official client, appending a payment-identifier `id` to every payment it signs. */
async function clientWithId(rail: Rail, id: string, payer = 0) {
  const client = await payerClient(payerKeys(stack, rail, payer), rail)
  client.onBeforePaymentCreation(async ({ paymentRequired }) => {
    if (paymentRequired.extensions)
      appendPaymentIdentifierToExtensions(paymentRequired.extensions, id)
  })
  return client
}

/** A PAYMENT-SIGNATURE for /hash with `body`, signed for the 402 that instance `svc` gave. */
async function signedHeader(svc: RunningService, body: unknown, rail: Rail, id?: string) {
  const unpaid = await post(svc, body)
  expect(unpaid.status).toBe(402)
  const client = id ? await clientWithId(rail, id) : await payerClient(payerKeys(stack, rail), rail)
  const http = new x402HTTPClient(client)
  const required = http.getPaymentRequiredResponse((name) => unpaid.headers.get(name))
  const payment: PaymentPayload = await http.createPaymentPayload(required)
  return encodePaymentSignatureHeader(payment)
}

/** The hash tool's answer, from node:crypto (an independent SHA-256). */
const expectedHash = (input: string) => {
  const digest = createHash('sha256').update(input).digest()
  return {
    ok: true,
    result: {
      algorithm: 'SHA-256',
      hex: digest.toString('hex'),
      base64: digest.toString('base64'),
      input_bytes: Buffer.byteLength(input),
    },
  }
}

const deliveryClaims = (settlement: SettleResponse | undefined) =>
  decodeJwt(
    (settlement?.extensions?.['delivery-receipt'] as { info: { receipt: string } } | undefined)
      ?.info.receipt ?? '',
  )

/**
 * Checks the SettleResponse a replay answers: the original without `payer` (the guard does not
 * keep it) and so without the official offer-receipt receipt that names it, and with a delivery
 * receipt signed for the replay: the same digests, clock and payment as the original's (its `iss`
 * and `resource` are the instance's own PUBLIC_BASE_URL here, one per instance).
 */
function expectReplayOf(replayed: unknown, original: SettleResponse): void {
  const { payer: _payer, extensions: _extensions, ...recorded } = original
  const { extensions, ...rest } = replayed as SettleResponse
  expect(rest).toEqual(recorded)
  expect(Object.keys(extensions ?? {})).toEqual(['delivery-receipt'])
  const { iss: _iss, resource: _resource, ...same } = deliveryClaims(original)
  expect(deliveryClaims(replayed as SettleResponse)).toMatchObject(same)
}

async function snapshot() {
  return {
    evm: await payToBalance(stack, 'evm'),
    solana: await payToBalance(stack, 'solana'),
    verify: stack.facilitatorRequests.verify,
    settle: stack.facilitatorRequests.settle,
  }
}

describe('idempotent paid calls on two instances sharing Redis', () => {
  it('declares the optional payment-identifier extension in the 402', async () => {
    const res = await post(a, { input: 'x' })
    const required = new x402HTTPClient(
      await payerClient(payerKeys(stack, 'evm')),
    ).getPaymentRequiredResponse((name) => res.headers.get(name)) as PaymentRequired
    expect(required.extensions?.['payment-identifier']).toMatchObject({ info: { required: false } })
  })

  it('replays a payment header on the same and on the other instance: one transfer, same result and transaction', async () => {
    const before = await snapshot()
    events.length = 0
    const header = await signedHeader(a, { input: 'replay me' }, 'evm', generatePaymentId())
    const first = await post(a, { input: 'replay me' }, { 'PAYMENT-SIGNATURE': header })
    expect(first.status).toBe(200)
    const settlement = decodePaymentResponseHeader(first.headers.get('PAYMENT-RESPONSE') ?? '')
    expect(settlement.success).toBe(true)
    expect(await json(first)).toEqual(expectedHash('replay me'))
    for (const svc of [a, b]) {
      const again = await post(svc, { input: 'replay me' }, { 'PAYMENT-SIGNATURE': header })
      expect(again.status).toBe(200)
      expect(await json(again)).toEqual(expectedHash('replay me'))
      const replayed = decodePaymentResponseHeader(again.headers.get('PAYMENT-RESPONSE') ?? '')
      expectReplayOf(replayed, settlement)
    }
    const after = await snapshot()
    expect(after.evm - before.evm).toBe(PRICE)
    expect(after.solana).toBe(before.solana)
    expect(after.verify - before.verify).toBe(1)
    expect(after.settle - before.settle).toBe(1)
    expect(events.map((e) => e.outcome)).toEqual(['verified', 'settled'])
  })

  it("replays a call re-signed with the same id by its own payer's official fetch wrapper; another wallet with that id gets 409 payment_identifier_conflict", async () => {
    const id = generatePaymentId()
    const before = await snapshot()
    /** One paid call through the official fetch wrapper, by a new client holding `id`. */
    const payOnce = async (svc: RunningService, rail: Rail, payer = 0) =>
      wrapFetchWithPayment(fetch, await clientWithId(rail, id, payer))(`${svc.baseUrl}/hash`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ input: 'same id' }),
      })
    const first = await payOnce(a, 'evm')
    expect(first.status).toBe(200)
    const tx = decodePaymentResponseHeader(first.headers.get('PAYMENT-RESPONSE') ?? '').transaction
    // A fresh client of the same wallet (as after a crash) signs a new payment with the same id:
    // it is verified (its payer must be the id's), never settled.
    const again = await payOnce(b, 'evm')
    expect(again.status).toBe(200)
    expect(await json(again)).toEqual(expectedHash('same id'))
    expect(
      decodePaymentResponseHeader(again.headers.get('PAYMENT-RESPONSE') ?? '').transaction,
    ).toBe(tx)
    // The same id from another payer address (another wallet, or the same person's Solana key):
    // a conflict, whatever the input, and nothing is charged.
    for (const [rail, payer] of [
      ['evm', 1],
      ['solana', 0],
    ] as const) {
      const other = await payOnce(a, rail, payer)
      expect(other.status).toBe(409)
      expect(await json(other)).toEqual({
        ok: false,
        error:
          'This payment-identifier id is held by another payment; nothing was charged. Use a new, random id',
        code: 'payment_identifier_conflict',
        request_id: other.headers.get('x-request-id'),
      })
    }
    const after = await snapshot()
    expect(after.evm - before.evm).toBe(PRICE)
    expect(after.solana).toBe(before.solana)
    expect(after.settle - before.settle).toBe(1)
  })

  it('refuses the same payment for a different body with 402 duplicate_settlement, charging nothing more', async () => {
    const header = await signedHeader(b, { input: 'one' }, 'solana')
    expect((await post(b, { input: 'one' }, { 'PAYMENT-SIGNATURE': header })).status).toBe(200)
    const before = await snapshot()
    const other = await post(a, { input: 'two' }, { 'PAYMENT-SIGNATURE': header })
    expect(other.status).toBe(402)
    expect(await json(other)).toEqual({
      ok: false,
      error: 'This payment already paid for a different call (tool or input); sign a new one',
      code: 'duplicate_settlement',
      request_id: other.headers.get('x-request-id'),
    })
    expect(await snapshot()).toEqual(before)
  })

  it('answers concurrent duplicates 409 payment_in_progress with Retry-After: 1; their retries get at most REPLAY_LIMIT replays', async () => {
    const before = await snapshot()
    const header = await signedHeader(a, { input: 'storm' }, 'evm')
    const send = (i: number) =>
      post(i % 2 ? a : b, { input: 'storm' }, { 'PAYMENT-SIGNATURE': header })
    const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => send(i)))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([])
    expect(statuses).toContain(409)
    const busy = answers.find((r) => r.status === 409) as Response
    expect(busy.headers.get('Retry-After')).toBe('1')
    expect(await json(busy)).toEqual({
      ok: false,
      error:
        'This payment is being processed by another request; retry after Retry-After for its result',
      code: 'payment_in_progress',
      request_id: busy.headers.get('x-request-id'),
    })
    // Retry every 409 after Retry-After until it gets the replay (all at once, as clients would).
    const finals = await Promise.all(
      answers.map(async (answer, i) => {
        let res = answer
        for (let tries = 0; res.status === 409 && tries < 30; tries++) {
          await new Promise((r) => setTimeout(r, 1000))
          res = await send(i)
        }
        return res
      }),
    )
    // One settled call and three replays (REPLAY_LIMIT); the rest are told the replays are used up.
    const settled = new Set<string>()
    const used: Response[] = []
    for (const res of finals) {
      if (res.status !== 200) {
        used.push(res)
        continue
      }
      if (!res.bodyUsed) expect(await json(res)).toEqual(expectedHash('storm'))
      settled.add(
        decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '').transaction,
      )
    }
    expect(finals.filter((r) => r.status === 200)).toHaveLength(4)
    expect(settled.size).toBe(1)
    expect(used.map((r) => r.status)).toEqual([402, 402, 402, 402])
    expect(((await json(used[0] as Response)) as { message?: string; error: string }).error).toBe(
      'This payment was already answered 3 more times (REPLAY_LIMIT): its replays are used up; sign a new one',
    )
    const after = await snapshot()
    expect(after.evm - before.evm).toBe(PRICE)
    expect(after.settle - before.settle).toBe(1)
  }, 60_000)

  it('replays over MCP with the original settlement in _meta["x402/payment-response"]', async () => {
    const connect = async (svc: RunningService) => {
      const mcp = new Client({ name: 'idempotency-e2e', version: '1.0.0' })
      await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`)))
      return mcp
    }
    const [ma, mb] = [await connect(a), await connect(b)]
    try {
      const call = (mcp: Client, payment?: PaymentPayload) =>
        mcp.callTool({
          name: 'payload_hash',
          arguments: { input: 'over mcp' },
          ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
        }) as Promise<CallToolResult>
      const unpaid = await call(ma)
      const client = await clientWithId('solana', generatePaymentId())
      const payment = await client.createPaymentPayload(unpaid.structuredContent as PaymentRequired)
      const before = await snapshot()
      const first = await call(ma, payment)
      expect(first.isError).toBeUndefined()
      const again = await call(mb, payment)
      expect(again.isError).toBeUndefined()
      expect(again.structuredContent).toEqual(first.structuredContent)
      expectReplayOf(
        again._meta?.['x402/payment-response'],
        first._meta?.['x402/payment-response'] as SettleResponse,
      )
      const after = await snapshot()
      expect(after.solana - before.solana).toBe(PRICE)
      expect(after.settle - before.settle).toBe(1)
    } finally {
      await ma.close()
      await mb.close()
    }
  })

  it('fails closed with 503 guard_unavailable while Redis is down: nothing verified or charged, free endpoints serve', async () => {
    await redis.stop()
    try {
      const header = await signedHeader(a, { input: 'outage' }, 'evm')
      const before = await snapshot()
      // Answered while Redis is still down: a call that waited for it would time the test out.
      const res = await post(a, { input: 'outage' }, { 'PAYMENT-SIGNATURE': header })
      expect(res.status).toBe(503)
      expect(res.headers.get('Retry-After')).toBe('5')
      expect(await json(res)).toEqual({
        ok: false,
        error:
          'The duplicate-settlement guard is unavailable; nothing was verified, run or charged. Retry',
        code: 'guard_unavailable',
        request_id: res.headers.get('x-request-id'),
      })
      expect(await snapshot()).toEqual(before)
      const health = (await json(await fetch(`${a.baseUrl}/health`))) as {
        status: string
        checks: { redis: { status: string } }
      }
      expect(health.status).toBe('degraded')
      expect(health.checks.redis.status).toBe('unavailable')
      expect((await post(b, { input: 'free' })).status).toBe(402)
      expect((await fetch(`${b.baseUrl}/openapi.json`)).status).toBe(200)
    } finally {
      await redis.start()
    }
    // Back: the same kind of call is paid once.
    const deadline = Date.now() + 60_000
    while (a.service.redis?.state().status !== 'ready' && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 50))
    }
    const header = await signedHeader(a, { input: 'after outage' }, 'evm')
    expect((await post(a, { input: 'after outage' }, { 'PAYMENT-SIGNATURE': header })).status).toBe(
      200,
    )
  }, 60_000)
})
