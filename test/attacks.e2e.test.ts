import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import {
  createServer as createHttpServer,
  type Server as HttpServer,
  request as httpRequest,
  type IncomingHttpHeaders,
} from 'node:http'
import { type AddressInfo, connect, type Server, type Socket } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { x402HTTPClient } from '@x402/core/client'
import {
  decodePaymentRequiredHeader,
  decodePaymentResponseHeader,
  encodePaymentSignatureHeader,
  HTTPFacilitatorClient,
} from '@x402/core/http'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import {
  appendPaymentIdentifierToExtensions,
  generatePaymentId,
} from '@x402/extensions/payment-identifier'
import { wrapFetchWithPayment } from '@x402/fetch'
import type { Hex } from 'viem'
import { generatePrivateKey } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { DevAccount } from '../src/devnet/anvil.js'
import { createServiceInstance } from '../src/devnet/instance.js'
import { freePort } from '../src/devnet/ports.js'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import type { SignedUsdcTransfer } from '../src/devnet/usdc.js'
import { logger } from '../src/logger.js'
import { createMemoryGuard } from '../src/payment/guard.js'
import { CHECKS_PER_THREAD, checkerThreads, FREE_CHECK_QUEUE } from '../src/runner/runner.js'
import { createTelemetry, type Telemetry } from '../src/telemetry/index.js'
import type { ToolEnv } from '../src/tools/types.js'
import { mcpTextOnlyCall } from './fixtures/hostile.js'
import { payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { parseExposition, total } from './helpers/metrics.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type RunningService, startService } from './helpers/service.js'

// The attacks of issue 16 ("One payment buys one call"), each against the service on the devnet
// (anvil, litesvm, the official facilitator) with the official x402 client, over HTTP and MCP
// where both apply. docs/security.md lists each threat with the test here that tries it.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
const PRICE = 1000n
let stack: DevStack
let svc: RunningService
let limited: RunningService
let mcp: Client

beforeAll(async () => {
  stack = await startDevStack({ payers: 2 })
  const overrides = { env: clock }
  svc = await startService(stack, {}, overrides)
  // A client's quota as deployed would be 120; 12 keeps the test short.
  limited = await startService(stack, { RATE_LIMIT_POINTS: '12' }, overrides)
  mcp = new Client({ name: 'attacks-e2e', version: '1.0.0' })
  await mcp.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`)))
}, 120_000)
afterAll(async () => {
  await mcp?.close()
  await svc?.stop()
  await limited?.stop()
  await stack?.stop()
})

const facilitator = () => stack.facilitators[0]?.requests ?? { verify: 0, settle: 0, supported: 0 }

/** The faults of the devnet facilitator, switched on and off by the tests. */
const faults = () => {
  const f = stack.facilitators[0]?.faults
  if (!f) throw new Error('no facilitator')
  return f
}

const post = (on: RunningService, path: string, body: string, payment?: PaymentPayload | string) =>
  fetch(`${on.baseUrl}${path}`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      ...(payment === undefined
        ? {}
        : {
            'PAYMENT-SIGNATURE':
              typeof payment === 'string' ? payment : encodePaymentSignatureHeader(payment),
          }),
    },
    body,
  })

/** A payment signed by the official client from the 402 `on` gives for `path` and `body`. */
async function signed(
  on: RunningService,
  path: string,
  body: string,
  rail: Rail = 'evm',
  payer = 0,
  id?: string,
): Promise<PaymentPayload> {
  const unpaid = await post(on, path, body)
  expect(unpaid.status).toBe(402)
  const client = await payerClient(payerKeys(stack, rail, payer), rail)
  if (id) {
    client.onBeforePaymentCreation(async ({ paymentRequired }) => {
      if (paymentRequired.extensions)
        appendPaymentIdentifierToExtensions(paymentRequired.extensions, id)
    })
  }
  const http = new x402HTTPClient(client)
  return http.createPaymentPayload(http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)))
}

const mcpCall = (name: string, args: unknown, payment?: PaymentPayload) =>
  mcp.callTool({
    name,
    arguments: args as Record<string, unknown>,
    ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
  }) as Promise<CallToolResult>

/** A payment for an MCP call, signed from its unpaid isError result. */
async function signedMcp(name: string, args: unknown, rail: Rail = 'evm', payer = 0, id?: string) {
  const unpaid = await mcpCall(name, args)
  const required = unpaid.structuredContent as PaymentRequired
  if (id && required.extensions) appendPaymentIdentifierToExtensions(required.extensions, id)
  return (await payerClient(payerKeys(stack, rail, payer), rail)).createPaymentPayload(required)
}

const codeOf = async (res: Response) => ((await json(res)) as { code?: string }).code

/** A raw MCP request of `text`, as a client would post it. */
const mcpPost = (on: RunningService, text: string) =>
  fetch(`${on.baseUrl}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: text,
  })

/** The JSON-RPC error (-32600, Invalid Request) that refuses a whole MCP request. */
const invalidRequest = (message: string) => ({
  jsonrpc: '2.0',
  id: null,
  error: { code: -32600, message },
})

/**
 * A failure envelope without its `request_id`, which must be the response's `X-Request-Id` (the
 * rest is compared exactly: the same for every request).
 */
async function envelope(res: Response): Promise<Record<string, unknown>> {
  const { request_id, ...rest } = (await json(res)) as Record<string, unknown>
  expect(request_id).toBe(res.headers.get('x-request-id'))
  return rest
}

/** An MCP failure envelope without its `request_id`. */
const failureOf = (result: CallToolResult) => {
  const failure = (result._meta?.['payload-tools/failure'] ?? {}) as Record<string, unknown>
  const { request_id, ...rest } = failure
  expect(typeof request_id).toBe('string')
  return rest as { code: string; error: string } & Record<string, unknown>
}

/** The failure code of an MCP tool result, or undefined when it is not a failure envelope. */
const failureCodeOf = (result: unknown): string | undefined =>
  typeof result === 'object' &&
  result !== null &&
  (result as CallToolResult)._meta?.['payload-tools/failure'] !== undefined
    ? failureOf(result as CallToolResult).code
    : undefined

/** Transport errors of a connection the server closed as the request went out. */
const CLOSED_CONNECTION = new Set(['ECONNRESET', 'EPIPE', 'UND_ERR_SOCKET'])

/**
 * Whether `error` (or one of its causes) is a connection closed under a request: a kept-alive
 * connection the server closed at the same moment (its idle timeout), or one it closed as its
 * request timeout passed on a machine too busy to send a 1 MB body in time. fetch resends only
 * idempotent methods; a POST is the client's to send again.
 */
function connectionClosed(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 4; e = e.cause, depth++) {
    if (CLOSED_CONNECTION.has(String((e as { code?: unknown }).code))) return true
  }
  return false
}

/**
 * `send` again when its connection was closed under it ({@link connectionClosed}), at most
 * twice, so that a loaded machine does not end a loop early. Any answer is kept as it came.
 */
async function resent<T>(send: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await send()
    } catch (error) {
      if (!connectionClosed(error) || attempt >= 2) throw error
    }
  }
}

/**
 * Sends an honest payer's paid call as docs/errors.md tells a payer to: the same payment again
 * after `facilitator_unavailable` (nothing run or charged), or after its connection was closed
 * under it ({@link resent}), at most twice either way, and after `settlement_unknown` or
 * `payment_in_progress` once their `Retry-After` (5 s) has passed (at most three times, as the MCP
 * bridge does). No other answer is retried.
 * @param call - sends the paid call, always with the same payment
 * @param failureCode - the answer's failure code, or undefined for any other answer
 * @returns the last answer
 * @throws what the last send threw
 */
async function payHonestly<T>(
  call: () => Promise<T>,
  failureCode: (answer: T) => Promise<string | undefined> | string | undefined,
): Promise<T> {
  for (let unavailable = 0, inDoubt = 0; ; ) {
    const answer = await resent(call)
    const code = await failureCode(answer)
    if (code === 'facilitator_unavailable' && unavailable < 2) unavailable++
    else if ((code === 'settlement_unknown' || code === 'payment_in_progress') && inDoubt < 3) {
      inDoubt++
      await new Promise((resolve) => setTimeout(resolve, 5_000))
    } else return answer
  }
}

/** The failure code of an HTTP answer of status 503 (its body read from a clone). */
const unavailableCodeOf = (res: Response) => (res.status === 503 ? codeOf(res.clone()) : undefined)

describe('a client-supplied schema is never compiled or run', () => {
  // Before: @x402/extensions compiled the echoed `schema` with a new Ajv and ran it on the event
  // loop, before verify: `^(a+)+$` against 40 "a" and "-" backtracks for hours. A valid id format.
  const hostile = (payment: PaymentPayload): PaymentPayload => ({
    ...payment,
    extensions: {
      ...payment.extensions,
      'payment-identifier': {
        info: { required: false, id: `${'a'.repeat(40)}-` },
        schema: { type: 'object', properties: { id: { type: 'string', pattern: '^(a+)+$' } } },
      },
    },
  })
  const message =
    `The payment's payment-identifier extension is invalid: its "schema" differs from the one ` +
    'offered; echo it unchanged'

  it('refuses a hostile payment-identifier schema at once over HTTP, and /health answers meanwhile', async () => {
    const before = { ...facilitator() }
    const body = '{"input":"redos"}'
    const payment = hostile(await signed(svc, '/hash', body))
    const [res, health] = await Promise.all([
      post(svc, '/hash', body, payment),
      fetch(`${svc.baseUrl}/health`),
    ])
    expect(health.status).toBe(200)
    expect(res.status).toBe(402)
    expect(await envelope(res)).toEqual({ ok: false, error: message, code: 'invalid_payment' })
    expect(facilitator().verify).toBe(before.verify)
  }, 30_000)

  it('refuses it the same way over MCP', async () => {
    const before = { ...facilitator() }
    const payment = hostile(await signedMcp('payload_hash', { input: 'redos' }))
    const result = await mcpCall('payload_hash', { input: 'redos' }, payment)
    expect(result.isError).toBe(true)
    expect(failureOf(result)).toMatchObject({ code: 'invalid_payment', error: message })
    expect(facilitator().verify).toBe(before.verify)
  }, 30_000)
})

describe('one payment, a bounded number of answers', () => {
  it('answers a resent PAYMENT-SIGNATURE at most REPLAY_LIMIT (3) more times, then 402; one transfer', async () => {
    const body = '{"value":[1,2,3],"schema":{"type":"array"}}'
    const before = { balance: await payToBalance(stack, 'evm'), ...facilitator() }
    const payment = await signed(svc, '/json-validate', body)
    const statuses: number[] = []
    for (let i = 0; i < 6; i++)
      statuses.push((await post(svc, '/json-validate', body, payment)).status)
    expect(statuses).toEqual([200, 200, 200, 200, 402, 402])
    const last = await post(svc, '/json-validate', body, payment)
    expect(await envelope(last)).toEqual({
      ok: false,
      error:
        'This payment was already answered 3 more times (REPLAY_LIMIT): its replays are used up; sign a new one',
      code: 'duplicate_settlement',
    })
    expect(await payToBalance(stack, 'evm')).toBe(before.balance + PRICE)
    expect(facilitator().settle - before.settle).toBe(1)
    expect(facilitator().verify - before.verify).toBe(1)
  })

  it('answers a resent MCP payment at most REPLAY_LIMIT more times, then duplicate_settlement', async () => {
    const args = { input: 'mcp replays' }
    const before = { balance: await payToBalance(stack, 'evm'), ...facilitator() }
    const payment = await signedMcp('payload_hash', args)
    const codes: (string | undefined)[] = []
    for (let i = 0; i < 6; i++) {
      const result = await mcpCall('payload_hash', args, payment)
      codes.push(result.isError ? failureOf(result).code : 'ok')
    }
    expect(codes).toEqual(['ok', 'ok', 'ok', 'ok', 'duplicate_settlement', 'duplicate_settlement'])
    expect(await payToBalance(stack, 'evm')).toBe(before.balance + PRICE)
    expect(facilitator().settle - before.settle).toBe(1)
  })

  it('charges every replay to the rate limit before it runs: over the limit, 429 and no run', async () => {
    const body = '{"input":"quota"}'
    // A fresh client address for this test: the limited instance counts 127.0.0.1.
    const payment = await signed(limited, '/hash', body)
    expect((await post(limited, '/hash', body, payment)).status).toBe(200)
    // Use up the quota with free requests.
    let free = 0
    while ((await fetch(`${limited.baseUrl}/stats`)).status !== 429) free++
    expect(free).toBeGreaterThan(0)
    const replay = await post(limited, '/hash', body, payment)
    expect(replay.status).toBe(429)
    expect(await codeOf(replay)).toBe('rate_limited')
    expect(Number(replay.headers.get('retry-after'))).toBeGreaterThan(0)
    // Junk payments buy no free input checks either.
    const junk = await post(limited, '/hash', body, 'bm90IGEgcGF5bWVudA==')
    expect([junk.status, await codeOf(junk)]).toEqual([429, 'rate_limited'])
  })
})

describe('MCP: one paid call per request', () => {
  const rpc = (body: unknown) => mcpPost(svc, JSON.stringify(body))
  const paidCall = (id: number, payment: PaymentPayload) => ({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: {
      name: 'payload_hash',
      arguments: { input: 'batch' },
      _meta: { 'x402/payment': payment },
    },
  })

  it('refuses a batch of two paid tools/call with one payment whole: HTTP 400, nothing verified or run', async () => {
    const payment = await signedMcp('payload_hash', { input: 'batch' })
    const before = { ...facilitator() }
    const res = await rpc([paidCall(1, payment), paidCall(2, payment)])
    expect(res.status).toBe(400)
    expect(await json(res)).toEqual(
      invalidRequest(
        'One request carries at most one paid tools/call (this batch holds 2); nothing was verified or run. Send each paid call in its own request.',
      ),
    )
    expect(facilitator()).toEqual(before)
    // The same payment alone is a paid call like any other.
    const alone = await rpc(paidCall(3, payment))
    expect(alone.status).toBe(200)
    expect(facilitator().settle - before.settle).toBe(1)
  })
})

describe('a payment-identifier id belongs to its payer', () => {
  const conflict = {
    ok: false,
    error:
      'This payment-identifier id is held by another payment; nothing was charged. Use a new, random id',
    code: 'payment_identifier_conflict',
  }

  it('answers another wallet holding the id 409 payment_identifier_conflict, whatever its input, and never charges it', async () => {
    const id = generatePaymentId()
    const secret = '{"input":"my secret","secret":"k"}'
    const first = await post(svc, '/hmac', secret, await signed(svc, '/hmac', secret, 'evm', 0, id))
    expect(first.status).toBe(200)
    const before = {
      payTo: await payToBalance(stack, 'evm'),
      attacker: await stack.evm.usdcBalance(stack.evm.payers[1]?.address ?? '0x'),
      ...facilitator(),
    }
    // The attacker's own, valid payments with the victim's id: the same input, and guesses.
    const answers = []
    for (const body of [
      secret,
      '{"input":"my secret","secret":"x"}',
      '{"input":"guess","secret":"k"}',
    ]) {
      const res = await post(svc, '/hmac', body, await signed(svc, '/hmac', body, 'evm', 1, id))
      answers.push([res.status, await envelope(res)])
    }
    // A payment that does not even verify: the victim's id on a copy with a forged signature.
    const forged = await signed(svc, '/hmac', secret, 'evm', 1, id)
    ;(forged.payload as { signature: string }).signature = `0x${'11'.repeat(65)}`
    const junk = await post(svc, '/hmac', secret, forged)
    answers.push([junk.status, await envelope(junk)])
    for (const answer of answers) expect(answer).toEqual([409, conflict])
    expect(await payToBalance(stack, 'evm')).toBe(before.payTo)
    expect(await stack.evm.usdcBalance(stack.evm.payers[1]?.address ?? '0x')).toBe(before.attacker)
    expect(facilitator().settle).toBe(before.settle)
  })

  it('does the same over MCP', async () => {
    const id = generatePaymentId()
    const args = { input: 'mcp secret', secret: 'k' }
    const first = await mcpCall(
      'payload_hmac',
      args,
      await signedMcp('payload_hmac', args, 'evm', 0, id),
    )
    expect(first.isError).toBeFalsy()
    const before = { ...facilitator() }
    for (const guess of [args, { input: 'guess', secret: 'k' }]) {
      const result = await mcpCall(
        'payload_hmac',
        guess,
        await signedMcp('payload_hmac', guess, 'evm', 1, id),
      )
      expect(result.isError).toBe(true)
      expect(failureOf(result)).toEqual(conflict)
      expect(result._meta?.['x402/payment-response']).toBeUndefined()
    }
    expect(facilitator().settle).toBe(before.settle)
  })
})

/** What a paid call with an input refused before payment answers (HTTP body, MCP failure). */
type Refusal = { code: string; error: string; issues?: unknown }

/** What safeParseUntrusted says of an object whose `length` is an object. */
const LENGTH_MESSAGE =
  'Invalid input: an object whose "length" member is an object or an array cannot be validated'

/** The refusal a paid call gets: the case's own, else the tool code and message of its issue. */
const refusalOf = (c: { issue: { code?: string; message: string }; paid?: Refusal }): Refusal =>
  // A tool's refusal says that nothing was charged (src/failures/describe.ts).
  c.paid ?? { code: c.issue.code as string, error: `${c.issue.message}; nothing was charged` }

describe('extreme input is a 400 before payment, never a 5xx', () => {
  const cases: {
    name: string
    path: string
    mcp: string
    body: string
    issue: { path: string; message: string; code?: string }
    paid?: Refusal
  }[] = [
    {
      name: '1e400 in json-validate',
      path: '/json-validate',
      mcp: 'payload_json_validate',
      body: '{"value":1e400,"schema":{}}',
      issue: {
        path: '/value',
        code: 'number_out_of_range',
        message:
          '/value is a number beyond the IEEE 754 double range (such as 1e400), which JSON parsing turns into Infinity',
      },
    },
    {
      name: 'pipeline input nested 200,000 levels',
      path: '/pipeline',
      mcp: 'payload_pipeline',
      body: `{"input":${'['.repeat(200_000)}${']'.repeat(200_000)},"operations":[{"type":"sha256"}]}`,
      issue: {
        path: `/input${'/0'.repeat(128)}`,
        code: 'input_too_deep',
        message: `/input${'/0'.repeat(128)} is nested more than 128 levels deep`,
      },
    },
    // Zod compares the `length` of an object with the array's bounds even after its type check
    // failed, and throws when that length is an object (a 500, and a 503 on a checker thread,
    // before src/tools/untrusted-parse.ts): checked on the calling thread (up to 1 KiB) and on a
    // checker thread.
    ...[
      ['on the calling thread', '{"input":"","operations":{"length":[{"toString":true}]}}'],
      [
        'on a checker thread',
        `{"input":"${'a'.repeat(2048)}","operations":{"length":{"valueOf":{},"toString":[]}}}`,
      ],
    ].map(([where, body]) => ({
      name: `an operations object whose length is an object, checked ${where}`,
      path: '/pipeline',
      mcp: 'payload_pipeline',
      body: body as string,
      issue: { path: '/operations', message: LENGTH_MESSAGE },
      paid: {
        code: 'invalid_request',
        error: `Invalid request: /operations ${LENGTH_MESSAGE}`,
        issues: [{ path: '/operations', message: LENGTH_MESSAGE }],
      },
    })),
  ]

  for (const c of cases) {
    it(`reports ${c.name} in the free input_check and refuses the paid call with its code, before verify unless the free lane could not check it (HTTP)`, async () => {
      const unpaid = await post(svc, c.path, c.body)
      expect(unpaid.status).toBe(402)
      const check = ((await json(unpaid)) as { input_check: { valid: unknown } }).input_check
      // The free lane yields to all other work (nice 19): on a machine with no CPU to spare it
      // answers that the body was not checked, as documented. The paid call below must not.
      if (check.valid === null) expect(check).toMatchObject({ valid: null, errors: [] })
      else expect(check).toEqual({ valid: false, errors: [c.issue] })
      const before = { ...facilitator() }
      const paidLane = svc.service.runner.status().lanes.paid.started
      const payment = await signed(svc, c.path, '{}')
      const paid = await post(svc, c.path, c.body, payment)
      expect(paid.status).toBe(400)
      expect(await json(paid)).toMatchObject({ ok: false, ...refusalOf(c) })
      // Checked on the free lane, nothing verified; or, when that lane had no CPU to spare, on
      // the paid lane once the payment verified (one verify, nothing charged).
      const escalated = svc.service.runner.status().lanes.paid.started - paidLane
      expect(facilitator().verify - before.verify).toBe(escalated)
    })

    it(`refuses ${c.name} the same way over MCP`, async () => {
      const before = { ...facilitator() }
      const paidLane = svc.service.runner.status().lanes.paid.started
      const payment = await signedMcp(c.mcp, {})
      const res = await fetch(`${svc.baseUrl}/mcp`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        body: `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"${c.mcp}","arguments":${c.body},"_meta":{"x402/payment":${JSON.stringify(payment)}}}}`,
      })
      expect(res.status).toBe(200)
      const { result } = (await json(res)) as { result: CallToolResult }
      expect(result.isError).toBe(true)
      expect(failureOf(result)).toMatchObject(refusalOf(c))
      const escalated = svc.service.runner.status().lanes.paid.started - paidLane
      expect(facilitator().verify - before.verify).toBe(escalated)
    })
  }
})

/** A copy of a JSON value with every object's keys in reverse order. */
const reordered = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.map(reordered)
    : value && typeof value === 'object'
      ? Object.fromEntries(
          Object.entries(value)
            .reverse()
            .map(([k, v]) => [k, reordered(v)]),
        )
      : value

describe('one key per authorization, whatever its spelling', () => {
  it('answers re-cased, reordered and re-encoded copies of one EIP-3009 payment sent with it: one verify, one settle, one transfer', async () => {
    const body = '{"input":"spelling"}'
    const payment = await signed(svc, '/hash', body)
    const { signature, authorization } = payment.payload as {
      signature: string
      authorization: Record<string, string>
    }
    const variants: PaymentPayload[] = [
      payment,
      {
        ...payment,
        payload: { authorization, signature: `0x${signature.slice(2).toUpperCase()}` },
      },
      {
        ...payment,
        payload: {
          signature,
          authorization: Object.fromEntries(
            Object.entries({
              ...authorization,
              from: `0x${(authorization.from ?? '').slice(2).toUpperCase()}`,
            }).reverse(),
          ),
        },
      },
      reordered(payment) as PaymentPayload,
    ]
    const before = { balance: await payToBalance(stack, 'evm'), ...facilitator() }
    const answers = await Promise.all(variants.map((v) => post(svc, '/hash', body, v)))
    const statuses = answers.map((r) => r.status)
    expect(statuses.filter((s) => s !== 200 && s !== 409)).toEqual([])
    expect(statuses).toContain(200)
    expect(facilitator().verify - before.verify).toBe(1)
    expect(facilitator().settle - before.settle).toBe(1)
    expect(await payToBalance(stack, 'evm')).toBe(before.balance + PRICE)
  })

  it('answers a Solana payment re-encoded in Base64 as the same payment: one settle, one transfer', async () => {
    const body = '{"input":"solana spelling"}'
    const payment = await signed(svc, '/hash', body, 'solana')
    const { transaction } = payment.payload as { transaction: string }
    const unpadded = { ...payment, payload: { transaction: transaction.replace(/=+$/, '') } }
    const before = { balance: await payToBalance(stack, 'solana'), ...facilitator() }
    const answers = await Promise.all([
      post(svc, '/hash', body, payment),
      post(svc, '/hash', body, unpadded),
    ])
    expect(answers.map((r) => r.status).filter((s) => s !== 200 && s !== 409)).toEqual([])
    expect(facilitator().settle - before.settle).toBe(1)
    expect(await payToBalance(stack, 'solana')).toBe(before.balance + PRICE)
  })
})

describe('settlement in doubt, told truthfully', () => {
  it('answers 503 settlement_unknown when the facilitator fails after receiving the settle, and settles the same payment on its retry: one transfer', async () => {
    const body = '{"input":"in doubt"}'
    const payment = await signed(svc, '/hash', body)
    const before = { balance: await payToBalance(stack, 'evm'), ...facilitator() }
    faults().settleFailures = 1
    const first = await post(svc, '/hash', body, payment)
    expect(first.status).toBe(503)
    expect(await envelope(first)).toEqual({
      ok: false,
      error:
        'The tool ran, but the settlement outcome is unknown: the payment may have moved. Retry the same payment for the same input within 120 s to get the result once it settles',
      code: 'settlement_unknown',
    })
    expect(first.headers.get('retry-after')).toBe('5')
    expect(await payToBalance(stack, 'evm')).toBe(before.balance)
    // Another input with the payment in doubt: refused, nothing settled.
    expect(await codeOf(await post(svc, '/hash', '{"input":"other"}', payment))).toBe(
      'duplicate_settlement',
    )
    // Its retry after Retry-After (before it, the record answers: round three below).
    await new Promise((resolve) => setTimeout(resolve, 5_000))
    const retry = await post(svc, '/hash', body, payment)
    expect(retry.status).toBe(200)
    expect(await payToBalance(stack, 'evm')).toBe(before.balance + PRICE)
    expect(facilitator().settle - before.settle).toBe(2)
  })

  it('answers a settle that timed out but landed settlement_unknown, then settlement_failed on its retry: charged once, without a result (docs/errors.md)', async () => {
    const quick = await startService(
      stack,
      { FACILITATOR_SETTLE_TIMEOUT_MS: '1000' },
      { env: clock },
    )
    try {
      const body = '{"input":"landed late"}'
      const payment = await signed(quick, '/hash', body)
      const before = await payToBalance(stack, 'evm')
      faults().settleDelayMs = 2500
      const first = await post(quick, '/hash', body, payment)
      const answeredAt = Date.now()
      expect([first.status, await codeOf(first)]).toEqual([503, 'settlement_unknown'])
      faults().settleDelayMs = 0
      // The facilitator settles after the service gave up: the payment moved.
      const deadline = Date.now() + 20_000
      while ((await payToBalance(stack, 'evm')) === before && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 200))
      }
      expect(await payToBalance(stack, 'evm')).toBe(before + PRICE)
      // Its retry, after Retry-After (5 s): the official facilitator refuses an authorization
      // whose nonce is used.
      await new Promise((resolve) => setTimeout(resolve, answeredAt + 5_000 - Date.now()))
      const retry = await post(quick, '/hash', body, payment)
      expect(retry.status).toBe(402)
      expect(await envelope(retry)).toEqual({
        ok: false,
        error: 'Settlement failed: invalid_exact_evm_nonce_already_used; the result is withheld',
        code: 'settlement_failed',
      })
      expect(await payToBalance(stack, 'evm')).toBe(before + PRICE)
    } finally {
      faults().settleDelayMs = 0
      await quick.stop()
    }
  }, 180_000)
})

// Issue 27, round two: requests without money that held the service, each tried again here.
describe('no request without money holds the service', () => {
  /**
   * The JSON of a real payment (without its echoed extensions) whose `accepted` carries `junk`:
   * arrays nested `depth` deep around a 12 KB string, built as text (no recursion here either).
   */
  const nested = (payment: PaymentPayload, depth: number, length = 12_000): string => {
    const { extensions: _, ...bare } = payment
    const junk = `${'['.repeat(depth)}"${'x'.repeat(length)}"${']'.repeat(depth)}`
    return JSON.stringify({ ...bare, accepted: { ...bare.accepted, junk: 'JUNK' } }).replace(
      '"JUNK"',
      junk,
    )
  }
  const base64 = (text: string) => Buffer.from(text).toString('base64')
  const paidCallText = (args: unknown, paymentJson: string) =>
    JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'payload_hash', arguments: args, _meta: { 'x402/payment': 'PAYMENT' } },
    }).replace('"PAYMENT"', paymentJson)
  const outOfBounds = 'The payment is out of bounds: it is nested more than 32 levels deep'

  it('refuses a payment nested 1,000 to 4,000 deep in accepted at once, before any SDK function or the facilitator sees it, /health answering meanwhile (HTTP)', async () => {
    const body = '{"input":"deep"}'
    const payment = await signed(svc, '/hash', body)
    const before = { ...facilitator() }
    const started = performance.now()
    for (const depth of [1000, 2000, 3000, 4000]) {
      const header = base64(nested(payment, depth))
      expect(header.length).toBeLessThan(32 * 1024)
      const [res, health] = await Promise.all([
        post(svc, '/hash', body, header),
        fetch(`${svc.baseUrl}/health`),
      ])
      expect(health.status).toBe(200)
      expect(res.status).toBe(402)
      expect(await envelope(res)).toEqual({
        ok: false,
        error: outOfBounds,
        code: 'invalid_payment',
      })
    }
    // A bound on a hang, not a target: on bae831a these four took over 40 s of the event loop.
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(facilitator()).toEqual(before)
  }, 180_000)

  it('refuses the same payment in _meta["x402/payment"] at once, as a body out of bounds (MCP)', async () => {
    const args = { input: 'deep' }
    const payment = await signedMcp('payload_hash', args)
    const before = { ...facilitator() }
    const started = performance.now()
    for (const depth of [1000, 3000]) {
      const res = await mcpPost(svc, paidCallText(args, nested(payment, depth)))
      expect(res.status).toBe(400)
      expect(await json(res)).toEqual(
        invalidRequest(
          'The JSON-RPC body is out of bounds (tool arguments aside): it is nested more than 40 levels deep',
        ),
      )
    }
    // Within the body's bounds, the payment's own bounds apply: nested 35 deep.
    const result = await mcpCall('payload_hash', args, JSON.parse(nested(payment, 33, 10)))
    expect(failureOf(result)).toMatchObject({ code: 'invalid_payment', error: outOfBounds })
    expect(performance.now() - started).toBeLessThan(10_000)
    expect(facilitator()).toEqual(before)
  }, 180_000)

  it('never lets unpaid input checks take paid capacity: a paid call with a body over 1 KiB gets 200 while 1 MB unpaid checks fill the free lane', async () => {
    const heavy = JSON.stringify({ value: new Array(500_000).fill(0), schema: {} })
    const unpaid = Array.from({ length: 12 }, () => post(svc, '/json-validate', heavy))
    // The load this test makes: wait until the free lane is full (a hang guard bounds the wait).
    const deadline = Date.now() + 30_000
    while (svc.service.runner.status().checking < 1 + FREE_CHECK_QUEUE && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    const body = JSON.stringify({ value: new Array(600).fill(1), schema: { type: 'array' } })
    expect(body.length).toBeGreaterThan(1024)
    const payment = await signed(svc, '/json-validate', body)
    const paid = await post(svc, '/json-validate', body, payment)
    expect(paid.status).toBe(200)
    const answers = await Promise.all(unpaid)
    expect(answers.map((r) => r.status)).toEqual(new Array(12).fill(402))
    const checks = await Promise.all(
      answers.map(
        async (r) => ((await json(r)) as { input_check: Record<string, unknown> }).input_check,
      ),
    )
    expect(checks).toContainEqual({
      valid: null,
      errors: [],
      reason:
        'The free input check is busy: the body was not checked. A paid call checks it before its payment is verified and charges nothing if it is invalid',
    })
  }, 120_000)

  it('charges an unpaid body a point per started 64 KiB before its free check: 1 MB over a quota of 12 is a 429 at once', async () => {
    const tight = await startService(stack, { RATE_LIMIT_POINTS: '12' }, { env: clock })
    try {
      // A small body is checked for free, within the quota.
      const small = await post(tight, '/hash', '{"input":"abc"}')
      expect(small.status).toBe(402)
      const heavy = JSON.stringify({ value: new Array(500_000).fill(0), schema: {} })
      const res = await post(tight, '/json-validate', heavy)
      expect([res.status, await codeOf(res)]).toEqual([429, 'rate_limited'])
      expect(tight.service.runner.status().checking).toBe(0)
    } finally {
      await tight.stop()
    }
  }, 180_000)

  it('reads a 956 KiB MCP tools/list holding 90,000 _meta keys off the main thread and refuses it out of bounds, four at once, /health answering meanwhile', async () => {
    const meta = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 0]))
    const text = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/list',
      params: { _meta: meta },
    })
    expect(text.length).toBeGreaterThan(900 * 1024)
    expect(text.length).toBeLessThan(1024 * 1024)
    const send = () => mcpPost(svc, text)
    const [health, ...answers] = await Promise.all([
      fetch(`${svc.baseUrl}/health`),
      send(),
      send(),
      send(),
      send(),
    ])
    expect(health?.status).toBe(200)
    // Each is read on the free lane (one thread, a queue of four): refused out of bounds, or, on
    // a machine too slow to read four in time, refused past the check's deadline or as the
    // lane's overload; never run.
    const refusal = invalidRequest(
      'The JSON-RPC body is out of bounds (tool arguments aside): an object or array holds more than 64 members',
    )
    for (const res of answers) {
      const body = (await json(res)) as { code?: string; jsonrpc?: string }
      if (body.jsonrpc) expect([res.status, body]).toEqual([400, refusal])
      else
        expect([
          [400, 'input_check_timeout'],
          [503, 'overloaded'],
        ]).toContainEqual([res.status, body.code])
    }
    // Alone, it is refused out of bounds, or, once the four have spent this address's quota
    // (each is charged by size before it is read), refused unread as rate limited, or past the
    // free check's deadline as above; never run.
    const alone = await send()
    const aloneBody = (await json(alone)) as { code?: string; jsonrpc?: string }
    if (aloneBody.jsonrpc) expect([alone.status, aloneBody]).toEqual([400, refusal])
    else
      expect([
        [400, 'input_check_timeout'],
        [429, 'rate_limited'],
      ]).toContainEqual([alone.status, aloneBody.code])
    // Its size is charged before it is read: 15 points over a quota of 12 is a 429, unread.
    const tight = await startService(stack, { RATE_LIMIT_POINTS: '12' }, { env: clock })
    try {
      const refused = await mcpPost(tight, text)
      expect([refused.status, await codeOf(refused)]).toEqual([429, 'rate_limited'])
    } finally {
      await tight.stop()
    }
  }, 180_000)

  it('refuses a junk payment ("value":"x", a random from and nonce) before the facilitator: the facilitator stays up, and each costs its point until 429', async () => {
    const tight = await startService(stack, { RATE_LIMIT_POINTS: '20' }, { env: clock })
    try {
      const body = '{"input":"junk"}'
      const real = await signed(tight, '/hash', body)
      const payload = real.payload as { authorization: Record<string, string>; signature: string }
      const junk = (i: number) =>
        encodePaymentSignatureHeader({
          ...real,
          payload: {
            ...payload,
            authorization: {
              ...payload.authorization,
              from: `0x${randomBytes(20).toString('hex')}`,
              nonce: `0x${randomBytes(32).toString('hex')}`,
              value: i % 2 ? 'x' : '1',
            },
          },
        })
      const before = { ...facilitator() }
      const codes: unknown[] = []
      for (let i = 0; i < 25; i++)
        codes.push(await codeOf(await post(tight, '/hash', body, junk(i))))
      // The 402 above took a point: 19 junk payments are answered, then the limit.
      expect(codes).toEqual([
        ...new Array(19).fill('invalid_payment'),
        ...new Array(6).fill('rate_limited'),
      ])
      expect(facilitator()).toEqual(before)
      expect(tight.service.link.status().state).not.toBe('unavailable')
      expect(tight.service.link.status().facilitators.map((f) => f.state)).not.toContain('down')
    } finally {
      await tight.stop()
    }
  }, 180_000)

  it('keeps a facilitator that answers 500 on one payment in service, and logs its reason and length, never its text', async () => {
    const body = '{"input":"verify 500"}'
    const warnings: unknown[] = []
    const spy = vi.spyOn(logger, 'warn').mockImplementation(((...args: unknown[]) => {
      warnings.push(args)
    }) as never)
    try {
      faults().verifyFailures = 3
      for (let i = 0; i < 3; i++) {
        const payment = await signed(svc, '/hash', body)
        const res = await post(svc, '/hash', body, payment)
        expect([res.status, await codeOf(res)]).toEqual([503, 'facilitator_unavailable'])
      }
    } finally {
      faults().verifyFailures = 0
      spy.mockRestore()
    }
    expect(svc.service.link.status().state).not.toBe('unavailable')
    expect(svc.service.link.status().facilitators.map((f) => f.state)).not.toContain('down')
    const logged = JSON.stringify(warnings)
    expect(logged).toContain('"reason":"HTTP 500"')
    for (const payer of stack.evm.payers) {
      expect(logged.toLowerCase()).not.toContain(payer.address.slice(2).toLowerCase())
    }
    expect(logged).not.toContain('fault injected')
    // The same payment, later, is verified and settled: nothing was held against it.
    const payment = await signed(svc, '/hash', body)
    expect((await post(svc, '/hash', body, payment)).status).toBe(200)
  }, 180_000)

  it('answers a Solana payment at most 1 + REPLAY_LIMIT times, also once the guard window has passed', async () => {
    let t = Date.now()
    const guarded = await startService(stack, {}, { env: clock, guard: createMemoryGuard(() => t) })
    try {
      const body = '{"input":"solana, later"}'
      const before = { balance: await payToBalance(stack, 'solana'), ...facilitator() }
      const payment = await signed(guarded, '/hash', body, 'solana')
      const statuses: number[] = []
      for (let i = 0; i < 5; i++)
        statuses.push((await post(guarded, '/hash', body, payment)).status)
      expect(statuses).toEqual([200, 200, 200, 200, 402])
      // 125 s later: the guard's window is over, the transaction could still land on a chain
      // whose blockhashes do not expire; its record is kept.
      t += 125_000
      const later = await post(guarded, '/hash', body, payment)
      expect([later.status, await codeOf(later)]).toEqual([402, 'duplicate_settlement'])
      expect(await payToBalance(stack, 'solana')).toBe(before.balance + PRICE)
      expect(facilitator().settle - before.settle).toBe(1)
    } finally {
      await guarded.stop()
    }
  }, 180_000)

  it('answers a payment whose payload is nested 5,000 deep 402 over HTTP and a JSON-RPC error over MCP, never 500', async () => {
    const body = '{"input":"deep payload"}'
    const payment = await signed(svc, '/hash', body)
    const deep = JSON.stringify({ ...payment, payload: 'DEEP' }).replace(
      '"DEEP"',
      `${'['.repeat(5000)}1${']'.repeat(5000)}`,
    )
    const res = await post(svc, '/hash', body, base64(deep))
    expect([res.status, await codeOf(res)]).toEqual([402, 'invalid_payment'])
    const rpc = await mcpPost(svc, paidCallText({ input: 'deep payload' }, deep))
    expect(rpc.status).toBe(400)
    expect(((await json(rpc)) as { error: { code: number } }).error.code).toBe(-32600)
  })

  it('refuses an EVM authorization valid for a year before verify', async () => {
    const body = '{"input":"a year"}'
    const payment = await signed(svc, '/hash', body)
    const payload = payment.payload as { authorization: Record<string, string> }
    const year = String(Math.floor(Date.now() / 1000) + 365 * 86400)
    const long = {
      ...payment,
      payload: { ...payload, authorization: { ...payload.authorization, validBefore: year } },
    }
    const before = { ...facilitator() }
    const res = await post(svc, '/hash', body, long)
    expect(res.status).toBe(402)
    expect(((await envelope(res)) as { error: string }).error).toMatch(
      /^The payment is refused: the authorization is valid for 3153\d{4} s; the offer allows at most 120 s \(maxTimeoutSeconds\)$/,
    )
    expect(facilitator()).toEqual(before)
  })

  it('answers a re-signed copy of a settled authorization without an id 409 payment_conflict, not payment_identifier_conflict', async () => {
    const body = '{"input":"re-signed"}'
    const payment = await signed(svc, '/hash', body)
    expect((await post(svc, '/hash', body, payment)).status).toBe(200)
    const before = { ...facilitator() }
    const signature = (payment.payload as { signature: string }).signature
    // The same authorization with another signature (its last byte, v, flipped).
    const v = signature.slice(-2) === '1b' ? '1c' : '1b'
    const copy = {
      ...payment,
      payload: { ...payment.payload, signature: `${signature.slice(0, -2)}${v}` },
    }
    const res = await post(svc, '/hash', body, copy)
    expect(res.status).toBe(409)
    expect(await envelope(res)).toEqual({
      ok: false,
      error:
        'This authorization was already presented with another signature; nothing was charged. Sign a new payment',
      code: 'payment_conflict',
    })
    expect(facilitator()).toEqual(before)
  })
})

// Issue 40, round three, finding 3: one address without money opened 4,200 connections and sent
// a byte on each, so that no request was ever parsed and no rate-limit point taken; the service
// sat at its 4,096-connection cap and an honest client on another address was reset.
describe('round three: connections', () => {
  /** The connections the flooding address keeps in the air: the red team's 4,200. */
  const WANTED = 4200
  /**
   * Open files this process may hold (`ulimit -n`): on main the flood costs two descriptors per
   * connection in this process (the client's and the server's). With a low limit the flood is
   * smaller (it still exceeds the cap per client many times over): Node cannot raise the limit.
   */
  const openFileLimit = (): number => {
    const line = /^Max open files\s+(\d+)/m.exec(readFileSync('/proc/self/limits', 'utf8'))
    return line ? Number(line[1]) : 1024
  }

  /**
   * One address (127.0.0.1) keeping `count` connections in the air, each sending one byte and
   * nothing more; a connection that closes is opened again a second later. Counts the
   * connections closed without a byte of answer (refused, not answered 408), and samples how many
   * connections `server` holds open (the flood's, and the honest client's one at a time).
   */
  function flood(port: number, count: number, server: Server) {
    let running = true
    const open = new Set<Socket>()
    let unanswered = 0
    const held: number[] = []
    const start = (): Promise<void> =>
      new Promise((resolve) => {
        const socket = connect({ port, host: '127.0.0.1' })
        let answered = false
        socket.on('error', () => {})
        socket.on('data', () => {
          answered = true
        })
        socket.once('connect', () => {
          open.add(socket)
          socket.write('G')
          resolve()
        })
        socket.once('close', () => {
          if (!answered) unanswered++
          open.delete(socket)
          resolve()
          if (running) setTimeout(() => running && start(), 1000)
        })
      })
    const opened = (async () => {
      // In batches, within the listen backlog.
      for (let i = 0; i < count; i += 200) {
        await Promise.all(Array.from({ length: Math.min(200, count - i) }, start))
      }
    })()
    const sampler = setInterval(() => {
      server.getConnections((error, n) => {
        if (!error) held.push(n)
      })
    }, 100)
    return {
      opened,
      stats: () => ({ unanswered, maxHeld: Math.max(0, ...held) }),
      stop: () => {
        running = false
        clearInterval(sampler)
        for (const socket of open) socket.destroy()
      },
    }
  }

  interface Answer {
    status: number
    headers: IncomingHttpHeaders
    body: string
  }

  /** One request over a new connection from `from` (127.0.0.2: another address than the flood's). */
  const honest = (
    url: string,
    init: { method?: string; headers?: Record<string, string>; body?: string } = {},
    from = '127.0.0.2',
  ) =>
    new Promise<Answer>((resolve, reject) => {
      const req = httpRequest(
        url,
        {
          method: init.method ?? 'GET',
          headers: init.headers ?? {},
          localAddress: from,
          agent: false,
        },
        (res) => {
          let body = ''
          res.setEncoding('utf8')
          res.on('data', (chunk) => {
            body += chunk
          })
          res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }))
        },
      )
      req.setTimeout(10_000, () => req.destroy(new Error('no answer within 10 s')))
      req.on('error', reject)
      req.end(init.body)
    })
  const outcome = (answer: Promise<Answer>) =>
    answer.then(
      (a) => a.status,
      (error: NodeJS.ErrnoException) => `${error.code ?? error.message}`,
    )

  it('serves an honest client on another address, /health and a paid call, while one address without money keeps 4,200 connections open with a byte each: beyond MAX_CONNECTIONS_PER_CLIENT (64) they are reset at once', async () => {
    // The defaults of src/main.ts: MAX_CONNECTIONS 4096, MAX_CONNECTIONS_PER_CLIENT 64.
    const own = await startService(stack, {}, { env: clock })
    const count = Math.min(WANTED, Math.floor((openFileLimit() - 1024) / 2))
    expect(count).toBeGreaterThan(1000)
    const attacker = flood(Number(new URL(own.baseUrl).port), count, own.server)
    try {
      await attacker.opened
      const body = '{"input":"beside a flood"}'
      const health: (number | string)[] = []
      for (let i = 0; i < 20; i++) {
        health.push(await outcome(honest(`${own.baseUrl}/health`)))
        await new Promise((resolve) => setTimeout(resolve, 150))
      }
      // A paid call from the same honest address: its 402, then its payment, each answered.
      const before = await payToBalance(stack, 'evm')
      const unpaid = await honest(`${own.baseUrl}/hash`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body,
      })
      expect(unpaid.status).toBe(402)
      const client = new x402HTTPClient(await payerClient(payerKeys(stack, 'evm', 0), 'evm'))
      const payment = await client.createPaymentPayload(
        client.getPaymentRequiredResponse((name) => {
          const value = unpaid.headers[name.toLowerCase()]
          return Array.isArray(value) ? value[0] : value
        }),
      )
      const paid = await honest(`${own.baseUrl}/hash`, {
        method: 'POST',
        headers: {
          'Content-Type': 'application/json',
          'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment),
        },
        body,
      })
      const stats = attacker.stats()
      expect(health).toEqual(new Array(20).fill(200))
      expect(paid.status, paid.body).toBe(200)
      const digest = createHash('sha256').update('beside a flood')
      expect(JSON.parse(paid.body)).toEqual({
        ok: true,
        result: {
          algorithm: 'SHA-256',
          input_bytes: 14,
          hex: digest.copy().digest('hex'),
          base64: digest.digest('base64'),
        },
      })
      expect(await payToBalance(stack, 'evm')).toBe(before + PRICE)
      // The flooding address held its share and never more (the honest client holds one more at
      // a time); the rest were refused as accepted.
      expect(stats.maxHeld).toBeGreaterThanOrEqual(64)
      expect(stats.maxHeld).toBeLessThanOrEqual(64 + 1)
      expect(stats.unanswered).toBeGreaterThan(count - 64 * 4)
    } finally {
      attacker.stop()
      await own.stop()
    }
  }, 120_000)

  it('takes MAX_CONNECTIONS_PER_CLIENT from the environment in the process npm start runs (src/main.ts): the fourth connection of one address is reset as accepted, another address is served, and the refusal is logged without an address', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'connections-'))
    const instance = createServiceInstance({
      name: 'connections',
      port: await freePort(),
      env: {
        ...stack.serviceEnv,
        MAX_CONNECTIONS_PER_CLIENT: '3',
        TOOL_WORKERS: '1',
        DATABASE_URL: join(dir, 'telemetry.sqlite'),
        TELEMETRY_SALT: 'connections-e2e-salt-0123',
      },
      logFile: join(dir, 'service.log'),
    })
    const sockets: Socket[] = []
    try {
      await instance.start()
      const open = () => {
        const socket = connect({
          port: instance.port,
          host: '127.0.0.1',
          localAddress: '127.0.0.4',
        })
        sockets.push(socket)
        let answer = ''
        socket.on('data', (chunk: Buffer) => {
          answer += chunk.toString('latin1')
        })
        socket.on('error', () => {})
        const closed = new Promise<string>((resolve) => socket.once('close', () => resolve(answer)))
        // A connection reset as it is accepted may close before this end sees its connect (a
        // busy test process): it is opened all the same.
        return new Promise<{ closed: Promise<string> }>((resolve) => {
          socket.once('connect', () => {
            socket.write('G')
            resolve({ closed })
          })
          void closed.then(() => resolve({ closed }))
        })
      }
      const held = [await open(), await open(), await open()]
      // Let the instance accept the three (a refusal would close one at once).
      await new Promise((resolve) => setTimeout(resolve, 500))
      const fourth = await open()
      const bound = new Promise<string>((resolve) =>
        setTimeout(() => resolve('still open'), 10_000),
      )
      expect(await Promise.race([fourth.closed, bound])).toBe('')
      expect(await outcome(honest(`${instance.url}/health`, {}, '127.0.0.5'))).toBe(200)
      // The three held ones are answered 408 once their head is overdue: they held a place.
      for (const c of held) expect(await c.closed).toMatch(/^HTTP\/1\.1 408 /)
      const lines = readFileSync(instance.logFile, 'utf8')
        .split('\n')
        .filter((line) => line.startsWith('{'))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(lines.find((l) => l.msg === 'listening')).toMatchObject({
        max_connections: 4096,
        max_connections_per_client: 3,
      })
      const refusals = lines.filter((l) => String(l.msg).startsWith('connection refused'))
      expect(
        refusals.map(({ level, reason, max_connections, max_connections_per_client, msg }) => ({
          level,
          reason,
          max_connections,
          max_connections_per_client,
          msg,
        })),
      ).toEqual([
        {
          level: 40,
          reason: 'per_client',
          max_connections: 4096,
          max_connections_per_client: 3,
          msg: 'connection refused at accept: its client holds MAX_CONNECTIONS_PER_CLIENT connections',
        },
      ])
      const log = readFileSync(instance.logFile, 'utf8')
      expect(log).not.toContain('127.0.0.4')
      expect(log).not.toContain('127.0.0.5')
    } finally {
      for (const socket of sockets) socket.destroy()
      await instance.stop()
      rmSync(dir, { recursive: true, force: true })
    }
  }, 240_000)
})

// Issue 40, round three: the chain judge. A service with EVM_RPC_URL (through a proxy that counts
// its JSON-RPC requests) and SOLANA_RPC_URL, the settlement ledger in SQLite telemetry, and a
// settle budget of 3 s (FACILITATOR_SETTLE_TIMEOUT_MS).
describe('round three: the chain judge', () => {
  const TOKEN = 'round-three-chain-judge-metrics-token'
  let judged: RunningService
  let telemetry: Telemetry
  let dir: string
  let rpcProxy: HttpServer
  /** JSON-RPC requests the service sent to the EVM chain (EVM_RPC_URL). */
  const chainReads = { count: 0 }

  beforeAll(async () => {
    rpcProxy = createHttpServer(async (req, res) => {
      const chunks: Buffer[] = []
      for await (const chunk of req) chunks.push(chunk as Buffer)
      chainReads.count++
      const upstream = await fetch(stack.evm.rpcUrl, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: Buffer.concat(chunks),
      })
      res.writeHead(upstream.status, { 'Content-Type': 'application/json' })
      res.end(Buffer.from(await upstream.arrayBuffer()))
    })
    await new Promise<void>((resolve) => rpcProxy.listen(0, '127.0.0.1', resolve))
    const { port } = rpcProxy.address() as AddressInfo
    dir = mkdtempSync(join(tmpdir(), 'round-three-judge-'))
    telemetry = await createTelemetry({
      databaseUrl: join(dir, 'telemetry.sqlite'),
      dataDir: dir,
      salt: 'round-three-judge-salt',
      cacheMs: 0,
    })
    judged = await startService(
      stack,
      {
        EVM_RPC_URL: `http://127.0.0.1:${port}`,
        SOLANA_RPC_URL: stack.solana.rpcUrl,
        FACILITATOR_SETTLE_TIMEOUT_MS: '3000',
        METRICS_TOKEN: TOKEN,
      },
      { env: clock, telemetry },
    )
  }, 120_000)
  afterAll(async () => {
    faults().settleFailures = 0
    faults().beforeNextSettle = undefined
    await judged?.stop()
    await telemetry?.close()
    await new Promise((resolve) => rpcProxy?.close(resolve))
    if (dir) rmSync(dir, { recursive: true, force: true })
  })

  /** Paid calls and revenue in /stats. */
  const stats = async () => {
    const res = await fetch(`${judged.baseUrl}/stats`)
    expect(res.status).toBe(200)
    const body = (await res.json()) as {
      successful_paid_calls: number
      revenue: { lifetime: { atomic: string } }
    }
    return { calls: body.successful_paid_calls, atomic: BigInt(body.revenue.lifetime.atomic) }
  }

  /** Tool runs of /hash on the workers (`tool_run_duration_seconds_count`, every outcome). */
  const toolRuns = async () => {
    const res = await fetch(`${judged.baseUrl}/metrics`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    })
    return total(parseExposition(await res.text()), 'tool_run_duration_seconds_count', {
      tool: 'hash',
    })
  }

  /** The hash tool's result for `input` (FIPS 180-4 SHA-256 by node:crypto). */
  const hashOf = (input: string) => {
    const digest = createHash('sha256').update(input)
    return {
      algorithm: 'SHA-256',
      input_bytes: Buffer.byteLength(input),
      hex: digest.copy().digest('hex'),
      base64: digest.digest('base64'),
    }
  }

  /** Waits out a response's Retry-After. */
  const waitRetryAfter = (res: Response) =>
    new Promise((resolve) => setTimeout(resolve, Number(res.headers.get('retry-after')) * 1000))

  /** A payment's EIP-3009 authorization as its payer signed it, for the payer to send itself. */
  const signedTransfer = (payment: PaymentPayload): SignedUsdcTransfer => {
    const { authorization: a, signature } = payment.payload as {
      authorization: Record<
        'from' | 'to' | 'value' | 'validAfter' | 'validBefore' | 'nonce',
        string
      >
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

  it('delivers one result for one transfer: five payments in doubt, then ONE Multicall3 transaction carrying the first as signed and the nonces of the four others spent on 1 unit each to the payer itself: one 200, four 402 settlement_not_landed, payTo + exactly the price, /stats + 1 call', async () => {
    const [payer, second] = stack.evm.payers as [DevAccount, DevAccount]
    const inputs = [1, 2, 3, 4, 5].map((n) => `one transaction, payment ${n}`)
    const bodies = inputs.map((input) => JSON.stringify({ input }))
    const payments: PaymentPayload[] = []
    for (const body of bodies) payments.push(await signed(judged, '/hash', body, 'evm', 0))
    const before = {
      payTo: await payToBalance(stack, 'evm'),
      payer: await stack.evm.usdcBalance(payer.address),
      second: await stack.evm.usdcBalance(second.address),
      stats: await stats(),
      ...facilitator(),
    }
    // Each settle fails at the facilitator before anything is broadcast: five in doubt.
    faults().settleFailures = 5
    for (const [i, payment] of payments.entries()) {
      const res = await post(judged, '/hash', bodies[i] as string, payment)
      expect([res.status, await codeOf(res)]).toEqual([503, 'settlement_unknown'])
    }
    expect(faults().settleFailures).toBe(0)
    expect(await payToBalance(stack, 'evm')).toBe(before.payTo)
    // The payer's one transaction: P1 as signed, P2..P5's nonces used by new authorizations of
    // its own (1 unit each to its second address), all through Multicall3's aggregate3.
    const [p1, ...others] = payments as [PaymentPayload, ...PaymentPayload[]]
    const spent = await Promise.all(
      others.map((payment) => {
        const { authorization } = signedTransfer(payment)
        return stack.evm.signTransfer(payer, {
          to: second.address,
          value: 1n,
          validBefore: authorization.validBefore,
          nonce: authorization.nonce,
        })
      }),
    )
    const transaction = await stack.evm.executeTransfers(payer, [signedTransfer(p1), ...spent])
    expect(before.payer - (await stack.evm.usdcBalance(payer.address))).toBe(PRICE + 4n)
    expect((await stack.evm.usdcBalance(second.address)) - before.second).toBe(4n)

    // The payer retries all five at once.
    const answers = await Promise.all(
      payments.map((payment, i) => post(judged, '/hash', bodies[i] as string, payment)),
    )
    const [first, ...rest] = answers as [Response, ...Response[]]
    expect(first.status).toBe(200)
    expect(await json(first)).toEqual({ ok: true, result: hashOf(inputs[0] as string) })
    expect(decodePaymentResponseHeader(first.headers.get('payment-response') ?? '')).toMatchObject({
      success: true,
      transaction,
      network: stack.evm.network,
    })
    for (const res of rest) {
      expect(res.status).toBe(402)
      expect(await envelope(res)).toEqual({
        ok: false,
        error:
          "The earlier settlement of this payment never landed on chain (authorization's nonce used by another transfer of the payer): nothing was charged and the result is withheld; sign a new payment",
        code: 'settlement_failed',
      })
      const required = decodePaymentRequiredHeader(res.headers.get('payment-required') ?? '')
      expect(required.error).toBe('settlement_not_landed')
    }
    // One transfer of the price, one call counted; no settle asked of the facilitator again.
    expect((await payToBalance(stack, 'evm')) - before.payTo).toBe(PRICE)
    const after = await stats()
    expect([after.calls - before.stats.calls, after.atomic - before.stats.atomic]).toEqual([
      1,
      PRICE,
    ])
    expect(facilitator().settle - before.settle).toBe(5)
    // Later: P1 replays its own transaction; P2 is free again, and its used nonce fails verify.
    const replay = await post(judged, '/hash', bodies[0] as string, p1)
    expect(replay.status).toBe(200)
    expect(
      decodePaymentResponseHeader(replay.headers.get('payment-response') ?? '').transaction,
    ).toBe(transaction)
    const again = await post(judged, '/hash', bodies[1] as string, payments[1] as PaymentPayload)
    expect([again.status, await codeOf(again)]).toEqual([402, 'payment_verification_failed'])
    expect((await payToBalance(stack, 'evm')) - before.payTo).toBe(PRICE)
    expect((await stats()).calls - before.stats.calls).toBe(1)
  }, 120_000)

  it('keeps a payment whose transaction waits in the mempool in doubt, though the facilitator then refuses its used nonce: 503 settlement_unknown with Retry-After while pending, then 200 with the result once it landed; charged once, counted once', async () => {
    const payer = stack.evm.payers[1] as DevAccount
    const input = 'waits in the mempool'
    const body = JSON.stringify({ input })
    const payment = await signed(judged, '/hash', body, 'evm', 1)
    const before = {
      payTo: await payToBalance(stack, 'evm'),
      payer: await stack.evm.usdcBalance(payer.address),
      stats: await stats(),
      ...facilitator(),
    }
    const infos: unknown[] = []
    const spy = vi.spyOn(logger, 'info').mockImplementation(((...args: unknown[]) => {
      infos.push(args)
    }) as never)
    // Blocks only when this test mines one: the facilitator's transaction waits in the mempool
    // for longer than the service's settle budget (3 s).
    await stack.evm.setAutomine(false)
    try {
      const first = await post(judged, '/hash', body, payment)
      expect([first.status, await codeOf(first)]).toEqual([503, 'settlement_unknown'])
      expect(first.headers.get('retry-after')).toBe('5')
      expect(await payToBalance(stack, 'evm')).toBe(before.payTo)
      // At once: the chain cannot tell yet.
      const pending = await post(judged, '/hash', body, payment)
      expect([pending.status, await codeOf(pending)]).toEqual([503, 'settlement_unknown'])
      expect(Number(pending.headers.get('retry-after'))).toBeGreaterThanOrEqual(1)
      await waitRetryAfter(pending)
      // Past Retry-After, still pending: the facilitator is asked again, and the block that
      // mines the first transaction comes as it does: it refuses the used nonce.
      faults().beforeNextSettle = () => stack.evm.mine()
      const refused = await post(judged, '/hash', body, payment)
      expect(faults().beforeNextSettle).toBeUndefined()
      expect([refused.status, await codeOf(refused)]).toEqual([503, 'settlement_unknown'])
      expect(refused.headers.get('retry-after')).toBe('5')
      expect(JSON.stringify(infos)).toContain(
        '{"reason":"invalid_exact_evm_nonce_already_used","network":"eip155:8453"},"facilitator refused a settlement in doubt: left to the chain judge"',
      )
      expect((await payToBalance(stack, 'evm')) - before.payTo).toBe(PRICE)
      expect((await stats()).calls).toBe(before.stats.calls)
      await waitRetryAfter(refused)
      const delivered = await post(judged, '/hash', body, payment)
      expect(delivered.status).toBe(200)
      expect(await json(delivered)).toEqual({ ok: true, result: hashOf(input) })
      const settlement = decodePaymentResponseHeader(
        delivered.headers.get('payment-response') ?? '',
      )
      expect(settlement).toMatchObject({ success: true, network: stack.evm.network })
      expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/)
    } finally {
      spy.mockRestore()
      faults().beforeNextSettle = undefined
      await stack.evm.setAutomine(true)
    }
    expect(before.payer - (await stack.evm.usdcBalance(payer.address))).toBe(PRICE)
    expect((await payToBalance(stack, 'evm')) - before.payTo).toBe(PRICE)
    const after = await stats()
    expect([after.calls - before.stats.calls, after.atomic - before.stats.atomic]).toEqual([
      1,
      PRICE,
    ])
    expect(facilitator().settle - before.settle).toBe(2)
  }, 120_000)

  it('answers a payment in doubt retried before its Retry-After from its record: one look at the chain, then no tool run, no settle and no chain read until Retry-After', async () => {
    const body = '{"input":"retried too fast"}'
    const payment = await signed(judged, '/hash', body, 'evm', 1)
    const before = { runs: await toolRuns(), reads: chainReads.count, ...facilitator() }
    faults().settleFailures = 100
    try {
      const first = await post(judged, '/hash', body, payment)
      expect([first.status, await codeOf(first)]).toEqual([503, 'settlement_unknown'])
      const answeredAt = Date.now()
      const counts = () => ({
        settles: facilitator().settle - before.settle,
        reads: chainReads.count - before.reads,
      })
      expect(counts()).toEqual({ settles: 1, reads: 0 })
      // The first quick retry: one look at the chain (undecided: nothing moved).
      const looked = await post(judged, '/hash', body, payment)
      expect([looked.status, await codeOf(looked)]).toEqual([503, 'settlement_unknown'])
      const reads = counts().reads
      expect(reads).toBeGreaterThan(0)
      // Then as fast as it can, for up to 3 s (its Retry-After is 5 s): the record answers.
      const waits: number[] = []
      while (waits.length < 20 && Date.now() - answeredAt < 3_000) {
        const res = await post(judged, '/hash', body, payment)
        expect([res.status, await codeOf(res)]).toEqual([503, 'settlement_unknown'])
        waits.push(Number(res.headers.get('retry-after')))
      }
      expect(waits.length).toBeGreaterThanOrEqual(2)
      for (const wait of waits) expect(wait >= 1 && wait <= 5).toBe(true)
      expect(counts()).toEqual({ settles: 1, reads })
      expect((await toolRuns()) - before.runs).toBe(1)
      // Past its Retry-After: asked again (the chain, then the facilitator, which fails again).
      await new Promise((resolve) => setTimeout(resolve, answeredAt + 5_000 - Date.now()))
      const asked = await post(judged, '/hash', body, payment)
      expect([asked.status, await codeOf(asked)]).toEqual([503, 'settlement_unknown'])
      expect(counts().settles).toBe(2)
      expect(counts().reads).toBeGreaterThan(reads)
      expect((await toolRuns()) - before.runs).toBe(2)
      faults().settleFailures = 0
      await waitRetryAfter(asked)
      const paid = await post(judged, '/hash', body, payment)
      expect(paid.status).toBe(200)
    } finally {
      faults().settleFailures = 0
    }
  }, 120_000)

  it('judges a Solana payment by its own signed transaction: another transaction of the same payer paying payTo the price is not it (still in doubt); its own is delivered once settled', async () => {
    const body = '{"input":"solana, its own transaction"}'
    const payment = await signed(judged, '/hash', body, 'solana', 0)
    const other = await signed(judged, '/hash', '{"input":"another one"}', 'solana', 0)
    const before = { payTo: await payToBalance(stack, 'solana'), stats: await stats() }
    faults().settleFailures = 1
    const first = await post(judged, '/hash', body, payment)
    expect([first.status, await codeOf(first)]).toEqual([503, 'settlement_unknown'])
    // The same payer's other transaction lands: the price, to payTo, from the same account.
    const landed = await new HTTPFacilitatorClient({ url: stack.facilitatorUrl }).settle(
      other,
      other.accepted,
    )
    expect(landed.success).toBe(true)
    expect((await payToBalance(stack, 'solana')) - before.payTo).toBe(PRICE)
    const retry = await post(judged, '/hash', body, payment)
    expect([retry.status, await codeOf(retry)]).toEqual([503, 'settlement_unknown'])
    expect((await stats()).calls).toBe(before.stats.calls)
    // Its own transaction, settled on the retry after Retry-After: delivered with it.
    await waitRetryAfter(retry)
    const delivered = await post(judged, '/hash', body, payment)
    expect(delivered.status).toBe(200)
    const settlement = decodePaymentResponseHeader(delivered.headers.get('payment-response') ?? '')
    expect(settlement.success).toBe(true)
    expect(settlement.transaction).not.toBe(landed.transaction)
    expect((await payToBalance(stack, 'solana')) - before.payTo).toBe(2n * PRICE)
    expect((await stats()).calls - before.stats.calls).toBe(1)
  }, 120_000)
})

describe('round three: points', () => {
  // Finding 6 of issue 40, round three, and the low items on points and client addresses: the
  // deployed quota (120 points per 60 s), each test's client told apart by the X-Forwarded-For
  // the service trusts (TRUST_PROXY_HOPS=1, as behind the shipped nginx).
  let points: RunningService
  /** A quota of 12, for the refusals that must come at once. */
  let tiny: RunningService
  beforeAll(async () => {
    points = await startService(
      stack,
      { RATE_LIMIT_POINTS: '120', TRUST_PROXY_HOPS: '1' },
      { env: clock },
    )
    tiny = await startService(
      stack,
      { RATE_LIMIT_POINTS: '12', TRUST_PROXY_HOPS: '1' },
      { env: clock },
    )
  }, 120_000)
  afterAll(async () => {
    await points?.stop()
    await tiny?.stop()
  })

  /** A /hash body of 1,000 KiB: 16 points (a point per started 64 KiB). */
  const bigHash = (tag: string) => JSON.stringify({ input: `${tag}:`.padEnd(1000 * 1024, 'x') })
  const from = (client: string, extra: Record<string, string> = {}) => ({
    'Content-Type': 'application/json',
    'X-Forwarded-For': client,
    ...extra,
  })
  /** A POST of `body` to `path` as `client`, with a PAYMENT-SIGNATURE when one is given. */
  const postAs = (
    on: RunningService,
    client: string,
    path: string,
    body: string,
    payment?: PaymentPayload,
  ) =>
    fetch(`${on.baseUrl}${path}`, {
      method: 'POST',
      headers: from(
        client,
        payment ? { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment) } : {},
      ),
      body,
    })
  /** As the official client does: the unpaid request (its 402), then the payment it signs. */
  const signAs = async (client: string, body: string, keys: Parameters<typeof payerClient>[0]) => {
    const unpaid = await postAs(points, client, '/hash', body)
    expect(unpaid.status).toBe(402)
    const http = new x402HTTPClient(await payerClient(keys))
    return http.createPaymentPayload(http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)))
  }

  it('serves an honest payer 14 paid calls of 1,000 KiB in a row through @x402/fetch within the deployed quota of 120: each 200, each paid, and its free requests after', async () => {
    const client = '198.51.100.60'
    const pay = wrapFetchWithPayment(fetch, await payerClient(payerKeys(stack, 'evm')))
    const before = await payToBalance(stack, 'evm')
    const statuses: number[] = []
    for (let i = 0; i < 14; i++) {
      const res = await pay(`${points.baseUrl}/hash`, {
        method: 'POST',
        headers: from(client),
        body: bigHash(`call ${i}`),
      })
      const body = (await json(res)) as { result?: { input_bytes?: number } }
      statuses.push(res.status)
      if (res.status === 200) expect(body.result?.input_bytes).toBe(1000 * 1024)
    }
    expect(statuses).toEqual(new Array(14).fill(200))
    expect((await payToBalance(stack, 'evm')) - before).toBe(14n * PRICE)
    // Not limited afterwards either: the unpaid request of the next call, of the same size.
    expect((await postAs(points, client, '/hash', bigHash('next'))).status).toBe(402)
  }, 240_000)

  it('serves the same 14 calls of 1,000 KiB over MCP (the official client: initialize, the unpaid call, the paid call)', async () => {
    const client = new Client({ name: 'round-three-points', version: '1.0.0' })
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${points.baseUrl}/mcp`), {
        requestInit: { headers: { 'X-Forwarded-For': '198.51.100.61' } },
      }),
    )
    try {
      const x402 = await payerClient(payerKeys(stack, 'evm'))
      const before = await payToBalance(stack, 'evm')
      const outcomes: string[] = []
      /** A tool call's outcome: a result, or the HTTP refusal the client throws (a 429). */
      const call = (args: Record<string, unknown>, payment?: PaymentPayload) =>
        client
          .callTool({
            name: 'payload_hash',
            arguments: args,
            ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
          })
          .then(
            (result) => result as CallToolResult,
            (error: Error) => error.message,
          )
      for (let i = 0; i < 14; i++) {
        const args = { input: `mcp ${i}:`.padEnd(1000 * 1024, 'x') }
        const unpaid = await call(args)
        if (typeof unpaid === 'string') {
          outcomes.push(`unpaid: ${unpaid}`)
          continue
        }
        const payment = await x402.createPaymentPayload(unpaid.structuredContent as PaymentRequired)
        const paid = await call(args, payment)
        if (typeof paid === 'string') outcomes.push(`paid: ${paid}`)
        else outcomes.push(paid.isError ? `paid: ${failureOf(paid).code}` : 'ok')
      }
      expect(outcomes).toEqual(new Array(14).fill('ok'))
      expect((await payToBalance(stack, 'evm')) - before).toBe(14n * PRICE)
    } finally {
      await client.close()
    }
  }, 240_000)

  it('still charges a payment that fails verify its points: a payer without USDC, resending one 1,000 KiB payment, gets six 402s and then 429, the facilitator asked six times', async () => {
    const client = '198.51.100.62'
    const body = bigHash('no funds')
    // The 402 took 16 of 120 points; each paid attempt takes 16 more and gives none back.
    const payment = await signAs(client, body, { evmPrivateKey: generatePrivateKey() })
    const before = facilitator().verify
    const codes: unknown[] = []
    for (let i = 0; i < 8; i++)
      codes.push(await codeOf(await postAs(points, client, '/hash', body, payment)))
    expect(codes).toEqual([
      ...new Array(6).fill('payment_verification_failed'),
      'rate_limited',
      'rate_limited',
    ])
    expect(facilitator().verify - before).toBe(6)
  }, 120_000)

  it('charges a verified payment whose tool fails its points after all: one valid 1,000 KiB payment resent after each tool error buys six runs, then 429, never a transfer', async () => {
    const client = '198.51.100.63'
    // Valid for the input check, refused by the tool when it runs (after verify): a `*`.
    const body = JSON.stringify({ mode: 'decode', input: `ab*d${'A'.repeat(1000 * 1024)}` })
    const unpaid = await postAs(points, client, '/base64', body)
    expect(unpaid.status).toBe(402)
    const http = new x402HTTPClient(await payerClient(payerKeys(stack, 'evm', 1)))
    const payment = await http.createPaymentPayload(
      http.getPaymentRequiredResponse((n) => unpaid.headers.get(n)),
    )
    const payer = stack.evm.payers[1] as DevAccount
    const balance = await stack.evm.usdcBalance(payer.address)
    const before = { ...facilitator() }
    const codes: unknown[] = []
    for (let i = 0; i < 8; i++) {
      codes.push(await codeOf(await postAs(points, client, '/base64', body, payment)))
    }
    // Its points come back at verify and are taken again when the call ends unsettled.
    expect(codes).toEqual([...new Array(6).fill('invalid_base64'), 'rate_limited', 'rate_limited'])
    expect([facilitator().verify - before.verify, facilitator().settle - before.settle]).toEqual([
      6, 0,
    ])
    expect(await stack.evm.usdcBalance(payer.address)).toBe(balance)
  }, 120_000)

  it('charges a /receipts/verify body a point per started 64 KiB before parsing it: 977 KiB over a quota of 12 is a 429 at once', async () => {
    const small = await postAs(tiny, '198.51.100.64', '/receipts/verify', '{"receipt":"x.y.z"}')
    expect(small.status).toBe(200)
    const big = JSON.stringify({ receipt: 'x.y.z', input: { input: 'x'.repeat(977 * 1024) } })
    expect(Math.ceil(Buffer.byteLength(big) / 65536)).toBe(16)
    const res = await postAs(tiny, '198.51.100.65', '/receipts/verify', big)
    expect([res.status, await codeOf(res)]).toEqual([429, 'rate_limited'])
    expect(res.headers.get('ratelimit-policy')).toBe('"free";q=12;w=60')
  }, 120_000)

  it('counts an IPv4 client in X-Forwarded-For as one client however its address is spelt (IPv4-mapped hex, upper case, NAT64): the 13th request over a quota of 12 is a 429, another address is served', async () => {
    const spellings = [
      '198.18.0.1',
      '::ffff:c612:1',
      '::ffff:198.18.0.1',
      '0:0:0:0:0:FFFF:C612:1',
      '64:ff9b::c612:1',
      '::FFFF:C612:0001',
    ]
    const get = (address: string) =>
      fetch(`${tiny.baseUrl}/robots.txt`, { headers: { 'X-Forwarded-For': address } })
    const statuses: number[] = []
    for (let i = 0; i < 12; i++) statuses.push((await get(spellings[i % 6] as string)).status)
    expect(statuses).toEqual(new Array(12).fill(200))
    for (const spelling of spellings) expect((await get(spelling)).status, spelling).toBe(429)
    expect((await get('198.18.0.2')).status).toBe(200)
    expect((await get('::ffff:c612:2')).status).toBe(200)
  }, 120_000)
})

// Issue 40, round three (findings 4 and 5): requests without a verified payment put free work on
// the paid lane. A payment earns the paid lane only once it verifies; an MCP body's lane is chosen
// from its parsed `_meta`, never from its bytes. One tool worker, so one thread on each checker
// lane (the paid one queues 16, the free one 4): the floods below fill them by themselves.
describe('round three: lanes', () => {
  let lanes: RunningService
  let honestMcp: Client
  beforeAll(async () => {
    // Every client of this file is 127.0.0.1: its flooding loops stand for as many addresses, so no
    // cap on one address's connections (the connections block tries that). The test stack's
    // facilitator shares this machine with the flood: a verify bound of 10 s (the budget allows
    // it) keeps a starved facilitator from passing for an outage of ours. A tool budget of 4 s
    // (the most that budget allows beside them) likewise keeps a tool worker (nice 10) that waits
    // seconds for a core, while other test files run, from answering `tool_timeout`.
    lanes = await startService(
      stack,
      {
        TOOL_WORKERS: '1',
        TOOL_TIMEOUT_MS: '4000',
        MAX_CONNECTIONS_PER_CLIENT: '0',
        FACILITATOR_TIMEOUT_MS: '10000',
      },
      { env: clock },
    )
    honestMcp = new Client({ name: 'lanes-e2e', version: '1.0.0' })
    await honestMcp.connect(new StreamableHTTPClientTransport(new URL(`${lanes.baseUrl}/mcp`)))
  }, 120_000)
  afterAll(async () => {
    await honestMcp?.close()
    await lanes?.stop()
  })

  const paidLaneStarted = () => lanes.service.runner.status().lanes.paid.started

  /**
   * Runs `send` in `clients` loops until `stop` resolves, each answer kept; resolves once every
   * loop has ended. The load the test makes, and the only load it waits for.
   */
  function flood<T>(clients: number, send: (client: number) => Promise<T>) {
    const answers: T[] = []
    let running = true
    const loops = Array.from({ length: clients }, async (_, client) => {
      while (running) answers.push(await send(client))
    })
    return {
      answers,
      /** Resolves once `n` answers came back (a hang guard bounds the wait). */
      async answered(n: number) {
        const deadline = Date.now() + 60_000
        while (answers.length < n && Date.now() < deadline) {
          await new Promise((resolve) => setTimeout(resolve, 50))
        }
        expect(answers.length).toBeGreaterThanOrEqual(n)
      },
      stop: async () => {
        running = false
        await Promise.all(loops)
      },
    }
  }

  it('(4) never puts the body of a payment that fails verify on the paid lane: 24 clients sending 1 MB json-validate bodies with unfunded payments, an honest payer beside gets 200 on every call', async () => {
    const heavy = JSON.stringify({ value: new Array(500_000).fill(0), schema: {} })
    expect(heavy.length).toBeGreaterThan(1_000_000)
    // Well-formed EIP-3009 payments for the body's 402, each signed by a key nobody funded: they
    // pass every check the service makes alone, and fail verify (insufficient_funds).
    const unpaid = await post(lanes, '/json-validate', '{"value":1,"schema":{}}')
    const required = new x402HTTPClient(await payerClient({})).getPaymentRequiredResponse((n) =>
      unpaid.headers.get(n),
    )
    const unfunded = await Promise.all(
      Array.from({ length: 24 }, async () =>
        (await payerClient({ evmPrivateKey: generatePrivateKey() })).createPaymentPayload(required),
      ),
    )
    let honestSends = 0
    const before = paidLaneStarted()
    const fakes = flood(unfunded.length, async (client) => {
      const res = await resent(() => post(lanes, '/json-validate', heavy, unfunded[client]))
      return `${res.status} ${await codeOf(res)}`
    })
    try {
      await fakes.answered(48)
      // Not one of them reached the paid lane while they flooded the free one.
      expect(paidLaneStarted()).toBe(before)
      const body = JSON.stringify({ input: 'h'.repeat(2000) })
      const honest: number[] = []
      for (let i = 0; i < 3; i++) {
        const payment = await signed(lanes, '/hash', body, 'evm', 1)
        const send = () => {
          honestSends++
          return post(lanes, '/hash', body, payment)
        }
        honest.push((await payHonestly(send, unavailableCodeOf)).status)
      }
      expect(honest).toEqual([200, 200, 200])
    } finally {
      await fakes.stop()
    }
    // At most the honest sends ran on the paid lane (3, and one more for each resend); every fake
    // was refused at verify.
    expect(paidLaneStarted() - before).toBeLessThanOrEqual(honestSends)
    expect(new Set(fakes.answers)).toEqual(new Set(['402 payment_verification_failed']))
  }, 180_000)

  it('(5) never reads an MCP body on the paid lane for the text "x402/payment": 24 clients sending unpaid 1 MB tools/call bodies holding it in their arguments, an honest MCP payer gets its result on every call', async () => {
    const text = mcpTextOnlyCall()
    expect(text.length).toBeGreaterThan(900 * 1024)
    expect(text.length).toBeLessThan(1024 * 1024)
    // The honest payer signs from the 402 of a small call (read on the calling thread), then
    // calls with arguments over 1 KiB and the payment in `_meta`.
    const small = { value: 1, schema: {} }
    const required = (
      (await honestMcp.callTool({
        name: 'payload_json_validate',
        arguments: small,
      })) as CallToolResult
    ).structuredContent as PaymentRequired
    const args = { value: new Array(600).fill(1), schema: { type: 'array' } }
    let honestSends = 0
    const before = paidLaneStarted()
    // More loops than the paid lane's places (one checker thread and CHECKS_PER_THREAD waiting),
    // so bodies that chose it by their bytes would refuse the honest payer; no more, because the
    // service and the facilitator share this process with the flood and a starved facilitator
    // would pass its 10 s verify bound.
    const clients = 24
    expect(clients).toBeGreaterThan(1 + CHECKS_PER_THREAD * checkerThreads(1))
    const attackers = flood(clients, async () => {
      const res = await resent(() => mcpPost(lanes, text))
      const body = (await json(res)) as { result?: CallToolResult; code?: string }
      return body.result
        ? `${res.status} ${failureOf(body.result).code}`
        : `${res.status} ${body.code}`
    })
    try {
      await attackers.answered(2 * clients)
      expect(paidLaneStarted()).toBe(before)
      const honest: unknown[] = []
      for (let i = 0; i < 3; i++) {
        const payment = await (await payerClient(payerKeys(stack, 'evm', 1))).createPaymentPayload(
          required,
        )
        const call = () => {
          honestSends++
          return honestMcp.callTool({
            name: 'payload_json_validate',
            arguments: args,
            _meta: { 'x402/payment': payment },
          })
        }
        // The test stack's facilitator runs in this process, beside the flood: a verify past its
        // bound is `facilitator_unavailable`, a settle past its bound `settlement_unknown`, and
        // the payer sends the same payment again as those answers say.
        const result = await payHonestly(call, failureCodeOf)
        honest.push((result as CallToolResult).structuredContent ?? result)
      }
      expect(honest).toEqual(
        new Array(3).fill({
          ok: true,
          result: { valid: true, error_count: 0, truncated: false, errors: [] },
        }),
      )
    } finally {
      await attackers.stop()
    }
    // At most the honest sends ran on the paid lane (3, and one more for each resend).
    expect(paidLaneStarted() - before).toBeLessThanOrEqual(honestSends)
    // Each was read on the free lane (402 result), or refused as its overload or, on a machine
    // with no CPU to spare for that lane, past its deadline; none was ever run or paid.
    for (const answer of new Set(attackers.answers)) {
      expect(['200 payment_required', '503 overloaded', '400 input_check_timeout']).toContain(
        answer,
      )
    }
  }, 180_000)
})
