import './helpers/fuzz/regexp-engine.js'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import canonicalize from 'canonicalize'
import fc from 'fast-check'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_BODY_BYTES } from '../src/http/app.js'
import { FAILURE_META_KEY, PAYMENT_META_KEY } from '../src/mcp/results.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { catalog } from '../src/tools/catalog.js'
import { type ToolDefinition, type ToolEnv, ToolError } from '../src/tools/types.js'
import { payerClient } from './helpers/clients.js'
import { documentedStatus } from './helpers/error-codes.js'
import { fuzzParameters, fuzzTimeout, scaledRuns } from './helpers/fuzz/config.js'
import { type FuzzCase, toolCases, validInputs } from './helpers/fuzz/inputs.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// Fuzzing the HTTP and MCP surfaces, unpaid and paid, on the devnet (anvil, litesvm, the official
// facilitator). Runs in `npm test` (scaled x10 by `npm run fuzz`):
//   HTTP unpaid 120, HTTP paid with invalid bodies 120 (one signed payment per tool, re-used),
//   HTTP paid and valid 8 (a fresh payment each), MCP unpaid 100, MCP paid invalid 100,
//   MCP paid valid 8, malformed JSON-RPC 40.
// Never a 5xx; every failure is the envelope {ok: false, error, code} with a documented code
// and status; a refused body never reaches the facilitator and leaves every balance alone; a 200
// carries exactly what tool.run gives for the same input (so HTTP and MCP agree).

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
const cases = new Map<string, fc.Arbitrary<FuzzCase>>()
const valids = new Map<string, fc.Arbitrary<unknown>>()

beforeAll(async () => {
  dev = await startDevService({ payers: 3, clock })
  for (const tool of catalog) {
    cases.set(tool.id, await toolCases(tool))
    valids.set(tool.id, await validInputs(tool))
  }
})
afterAll(() => dev?.stop())

/** A body as bytes: a generated JSON case, or raw text that is not JSON (some not even UTF-8). */
interface Body {
  bytes: Uint8Array
  /** The JSON text, when the body is UTF-8 JSON. */
  text?: string
}

const utf8 = (text: string): Body => ({ bytes: new Uint8Array(Buffer.from(text)), text })
const raw = (text: string): Body => ({ bytes: new Uint8Array(Buffer.from(text)) })

const nonJson: fc.Arbitrary<Body> = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }).map(raw),
  fc
    .constantFrom(
      '',
      '   ',
      '\uFEFF{}',
      '{"a":1,}',
      "{'a':1}",
      'NaN',
      '[1,2',
      '{"input":',
      'null null',
    )
    .map(raw),
  fc.uint8Array({ minLength: 1, maxLength: 40 }).map((bytes) => ({ bytes })),
  fc.jsonValue().map((v) => raw(JSON.stringify(v).slice(0, -1) || '{')),
)

/** The catalogue's tools, printed by id in counterexamples (not as the whole catalogue entry). */
const toolArb = fc.constantFrom(
  ...catalog.map((tool) =>
    Object.assign(Object.create(tool) as ToolDefinition, { [fc.toStringMethod]: () => tool.id }),
  ),
)

/** A tool, a valid input for it (from `valids`, filled in beforeAll) and a rail. */
const validCall = () =>
  toolArb.chain((tool) =>
    fc.tuple(
      fc.constant(tool),
      valids.get(tool.id) as fc.Arbitrary<unknown>,
      fc.constantFrom<Rail>('evm', 'solana'),
    ),
  )

const jsonCase = (tool: ToolDefinition) =>
  (cases.get(tool.id) as fc.Arbitrary<FuzzCase>).map((c) => utf8(c.text))
const anyBody = (tool: ToolDefinition) =>
  fc.oneof({ arbitrary: jsonCase(tool), weight: 4 }, { arbitrary: nonJson, weight: 1 })

/** What the gate will make of a body, with the tool code of a shape refusal. */
interface Expected {
  kind: 'not_json' | 'empty' | 'invalid' | 'refused' | 'valid'
  code?: string
}

/**
 * What the gate will make of a body: empty, not JSON, or JSON whose Zod check fails, whose shape
 * the tool refuses (`tool.check`: a number such as 1e400, nesting beyond 128 levels, a lone
 * surrogate; refused before payment with the tool's code), or that passes. Decoded as
 * `Request.text()` does (WHATWG "UTF-8 decode": a leading BOM dropped, invalid sequences replaced
 * by U+FFFD), as the input checker does.
 */
function expectation(tool: ToolDefinition, body: Body): Expected {
  const text = new TextDecoder().decode(body.bytes)
  if (text.trim() === '') return { kind: 'empty' }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { kind: 'not_json' }
  }
  return shapeOf(tool, value)
}

/** Whether a parsed input passes the tool's schema, then its shape check. */
function shapeOf(tool: ToolDefinition, value: unknown): Expected {
  let parsed: ReturnType<typeof tool.input.safeParse>
  try {
    parsed = tool.input.safeParse(value)
  } catch {
    // Zod itself could not finish (an object whose `length` is an object, where a string or an
    // array is expected: src/tools/untrusted-parse.ts); the service must refuse it as invalid.
    return { kind: 'invalid' }
  }
  if (!parsed.success) return { kind: 'invalid' }
  try {
    tool.check(parsed.data)
  } catch (error) {
    if (error instanceof ToolError) return { kind: 'refused', code: error.code }
    throw error
  }
  return { kind: 'valid' }
}

/** The code of the 400 a paid call with such a body gets. */
const refusalCode = (expected: Expected) =>
  expected.kind === 'invalid'
    ? 'invalid_request'
    : expected.kind === 'refused'
      ? expected.code
      : 'invalid_json'

/**
 * Checks the failure envelope: exactly ok/error/code/request_id plus the documented extras, a
 * documented code.
 */
function expectEnvelope(body: Record<string, unknown>, status: number) {
  expect(body.ok).toBe(false)
  expect(typeof body.error).toBe('string')
  expect(body.request_id).toMatch(/^[A-Za-z0-9_=-]{1,128}$/)
  expect(documentedStatus(body.code), `code ${String(body.code)}`).toBe(status)
  const extras = Object.keys(body).filter((k) => !['ok', 'error', 'code', 'request_id'].includes(k))
  for (const key of extras) expect(['issues', 'details', 'input_check']).toContain(key)
}

/** Facilitator requests, events and balances now, to prove later that nothing moved. */
async function snapshot() {
  const { stack } = dev
  return {
    verify: stack.facilitatorRequests.verify,
    settle: stack.facilitatorRequests.settle,
    events: dev.events.length,
    evm: await payToBalance(stack, 'evm'),
    solana: await payToBalance(stack, 'solana'),
    payerEvm: await stack.evm.usdcBalance(stack.evm.payers[0]?.address as `0x${string}`),
  }
}

async function expectUntouched(before: Awaited<ReturnType<typeof snapshot>>) {
  expect(await snapshot()).toEqual(before)
}

const postHttp = (tool: ToolDefinition, body: Body, headers: Record<string, string> = {}) =>
  fetch(`${dev.svc.baseUrl}${tool.path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: body.bytes,
  })

/** `tools/call` as raw JSON-RPC text, so duplicate keys and odd numbers reach the server as sent. */
function mcpCall(
  tool: ToolDefinition,
  argumentsText: string,
  payment?: PaymentPayload,
): Uint8Array {
  const meta = payment ? `,"_meta":${JSON.stringify({ [PAYMENT_META_KEY]: payment })}` : ''
  const text = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":${JSON.stringify(tool.mcpName)},"arguments":${argumentsText}${meta}}}`
  return new Uint8Array(Buffer.from(text))
}

const postMcp = (tool: ToolDefinition, argumentsText: string, payment?: PaymentPayload) =>
  postMcpRaw(mcpCall(tool, argumentsText, payment))

const postMcpRaw = (bytes: Uint8Array) =>
  fetch(`${dev.svc.baseUrl}/mcp`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' },
    body: bytes,
  })

/**
 * What tool.run gives for a body the gate accepts: the result, or the ToolError. Built from the
 * libraries, not from the service's own code path (src/runner/check.ts), so that a bug there cannot
 * hide in the oracle: the tool's Zod schema by a plain safeParse (defaults applied), the tool's
 * shape check on the value as parsed (its first refusal may depend on the order of the keys: a
 * schema's `$id` and `$ref` problems), then the tool on the RFC 8785 form (`canonicalize`), as
 * SPEC promises: a result never depends on the order of the body's keys (a json-validate `const`
 * message quotes the schema's object).
 */
function localRun(tool: ToolDefinition, text: string): { result?: unknown; error?: ToolError } {
  const parsed = tool.input.safeParse(JSON.parse(text))
  if (!parsed.success) throw new Error(`the generator made an input its schema refuses: ${text}`)
  try {
    tool.check(parsed.data)
    const canonical = canonicalize(parsed.data)
    if (canonical === undefined) throw new Error(`no RFC 8785 form: ${text}`)
    return { result: tool.run(JSON.parse(canonical), clock) }
  } catch (error) {
    if (error instanceof ToolError) return { error }
    throw error
  }
}

/** A PaymentPayload for `tool` over `transport`, signed by the official client for its 402. */
async function signFor(tool: ToolDefinition, transport: 'http' | 'mcp', rail: Rail, payer: number) {
  const example = JSON.stringify(tool.examples[0])
  let required: PaymentRequired
  if (transport === 'http') {
    const unpaid = await postHttp(tool, utf8(example))
    required = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED') ?? '')
  } else {
    const unpaid = await json(await postMcp(tool, example))
    required = unpaid.result.structuredContent as PaymentRequired
  }
  const client = await payerClient(payerKeys(dev.stack, rail, payer), rail)
  return client.createPaymentPayload(required)
}

const encode = (payment: PaymentPayload) =>
  new x402HTTPClient(undefined as never).encodePaymentSignatureHeader(payment)[
    'PAYMENT-SIGNATURE'
  ] as string

describe('fuzzing the HTTP surface', () => {
  it(
    'unpaid: always 402 with the envelope and input_check, or 413 over 1 MiB; never 5xx',
    async () => {
      const before = await snapshot()
      await fc.assert(
        fc.asyncProperty(
          toolArb.chain((tool) => fc.tuple(fc.constant(tool), anyBody(tool))),
          async ([tool, body]) => {
            const res = await postHttp(tool, body)
            const envelope = await json(res)
            if (body.bytes.length > MAX_BODY_BYTES) {
              expect([res.status, envelope.code]).toEqual([413, 'payload_too_large'])
              return
            }
            expect(res.status).toBe(402)
            expectEnvelope(envelope, 402)
            expect(envelope.code).toBe('payment_required')
            const { kind } = expectation(tool, body)
            if (kind === 'empty') expect(envelope.input_check).toBeUndefined()
            else expect(envelope.input_check.valid).toBe(kind === 'valid')
            const required = decodePaymentRequiredHeader(res.headers.get('PAYMENT-REQUIRED') ?? '')
            expect(required.accepts.map((a) => a.amount)).toEqual([tool.price, tool.price])
          },
        ),
        fuzzParameters('HTTP unpaid', scaledRuns(120)),
      )
      await expectUntouched(before)
    },
    fuzzTimeout(60_000),
  )

  it(
    'paid with an invalid body: 400 with a documented code, facilitator never called, balances unchanged',
    async () => {
      const headers = new Map<string, string>()
      for (const tool of catalog)
        headers.set(tool.id, encode(await signFor(tool, 'http', 'evm', 0)))
      const before = await snapshot()
      await fc.assert(
        fc.asyncProperty(
          toolArb.chain((tool) => fc.tuple(fc.constant(tool), anyBody(tool))),
          async ([tool, body]) => {
            const expected = expectation(tool, body)
            fc.pre(expected.kind !== 'valid')
            const res = await postHttp(tool, body, {
              'PAYMENT-SIGNATURE': headers.get(tool.id) as string,
            })
            const envelope = await json(res)
            if (body.bytes.length > MAX_BODY_BYTES) {
              expect([res.status, envelope.code]).toEqual([413, 'payload_too_large'])
              return
            }
            expect(res.status).toBe(400)
            expectEnvelope(envelope, 400)
            expect(envelope.code).toBe(refusalCode(expected))
          },
        ),
        fuzzParameters('HTTP paid, invalid body', scaledRuns(120)),
      )
      await expectUntouched(before)
    },
    fuzzTimeout(60_000),
  )

  it(
    'paid with a valid body: exactly what tool.run gives (200 settled, or 400 unsettled)',
    async () => {
      await fc.assert(
        fc.asyncProperty(validCall(), async ([tool, input, rail]) => {
          const text = JSON.stringify(input)
          const expected = localRun(tool, text)
          const header = encode(await signFor(tool, 'http', rail, 1))
          const before = await payToBalance(dev.stack, rail)
          const res = await postHttp(tool, utf8(text), { 'PAYMENT-SIGNATURE': header })
          const body = await json(res)
          if (expected.error) {
            expect([res.status, body]).toEqual([
              400,
              {
                ok: false,
                error: `${expected.error.message}; nothing was charged`,
                code: expected.error.code,
                ...(expected.error.details ? { details: expected.error.details } : {}),
                request_id: res.headers.get('x-request-id'),
              },
            ])
            expect(await payToBalance(dev.stack, rail)).toBe(before)
            return
          }
          expect(res.status).toBe(200)
          expect(JSON.stringify(body)).toBe(JSON.stringify({ ok: true, result: expected.result }))
          expect((await payToBalance(dev.stack, rail)) - before).toBe(BigInt(tool.price))
        }),
        fuzzParameters('HTTP paid, valid body', scaledRuns(8)),
      )
    },
    fuzzTimeout(60_000),
  )
})

describe('fuzzing the MCP surface', () => {
  /** Generated arguments whose JSON text is an object (MCP requires arguments to be one). */
  const objectCase = (tool: ToolDefinition) =>
    (cases.get(tool.id) as fc.Arbitrary<FuzzCase>).filter((c) => c.text.startsWith('{'))

  /** The `isError` result of a tools/call, with the envelope it carries in _meta. */
  async function callResult(res: Response) {
    expect(res.status).toBe(200)
    const body = await json(res)
    expect(body.error).toBeUndefined()
    return body.result as {
      isError?: boolean
      structuredContent: Record<string, unknown>
      _meta?: Record<string, unknown>
    }
  }

  it(
    'unpaid: always the PaymentRequired with the envelope and input_check; never 5xx',
    async () => {
      const before = await snapshot()
      await fc.assert(
        fc.asyncProperty(
          toolArb.chain((tool) => fc.tuple(fc.constant(tool), objectCase(tool))),
          async ([tool, c]) => {
            const request = mcpCall(tool, c.text)
            const res = await postMcpRaw(request)
            if (request.length > MAX_BODY_BYTES) {
              expect([res.status, (await json(res)).code]).toEqual([413, 'payload_too_large'])
              return
            }
            const result = await callResult(res)
            expect(result.isError).toBe(true)
            const envelope = result._meta?.[FAILURE_META_KEY] as Record<string, unknown>
            expectEnvelope(envelope, 402)
            expect(envelope.code).toBe('payment_required')
            const valid = shapeOf(tool, JSON.parse(c.text)).kind === 'valid'
            expect((envelope.input_check as { valid: boolean }).valid).toBe(valid)
            expect((result.structuredContent as unknown as PaymentRequired).accepts).toHaveLength(2)
          },
        ),
        fuzzParameters('MCP unpaid', scaledRuns(100)),
      )
      await expectUntouched(before)
    },
    fuzzTimeout(60_000),
  )

  it(
    'paid with invalid arguments: invalid_request or the shape code, facilitator never called, balances unchanged',
    async () => {
      const payments = new Map<string, PaymentPayload>()
      for (const tool of catalog) payments.set(tool.id, await signFor(tool, 'mcp', 'evm', 0))
      const before = await snapshot()
      await fc.assert(
        fc.asyncProperty(
          toolArb.chain((tool) => fc.tuple(fc.constant(tool), objectCase(tool))),
          async ([tool, c]) => {
            const expected = shapeOf(tool, JSON.parse(c.text))
            fc.pre(expected.kind !== 'valid')
            const request = mcpCall(tool, c.text, payments.get(tool.id))
            const res = await postMcpRaw(request)
            if (request.length > MAX_BODY_BYTES) {
              expect([res.status, (await json(res)).code]).toEqual([413, 'payload_too_large'])
              return
            }
            const result = await callResult(res)
            expect(result.isError).toBe(true)
            const envelope = result._meta?.[FAILURE_META_KEY] as Record<string, unknown>
            expectEnvelope(envelope, 400)
            expect(envelope.code).toBe(refusalCode(expected))
            expect(result.structuredContent).toEqual(envelope)
          },
        ),
        fuzzParameters('MCP paid, invalid arguments', scaledRuns(100)),
      )
      await expectUntouched(before)
    },
    fuzzTimeout(60_000),
  )

  it(
    'paid with valid arguments: exactly what tool.run gives, as over HTTP',
    async () => {
      await fc.assert(
        fc.asyncProperty(validCall(), async ([tool, input, rail]) => {
          const text = JSON.stringify(input)
          const expected = localRun(tool, text)
          const payment = await signFor(tool, 'mcp', rail, 2)
          const before = await payToBalance(dev.stack, rail)
          const result = await callResult(await postMcp(tool, text, payment))
          if (expected.error) {
            expect(result.isError).toBe(true)
            const envelope = result._meta?.[FAILURE_META_KEY] as Record<string, unknown>
            expect([envelope.code, envelope.error]).toEqual([
              expected.error.code,
              `${expected.error.message}; nothing was charged`,
            ])
            expect(await payToBalance(dev.stack, rail)).toBe(before)
            return
          }
          expect(result.isError).toBeUndefined()
          expect(JSON.stringify(result.structuredContent)).toBe(
            JSON.stringify({ ok: true, result: expected.result }),
          )
          expect((await payToBalance(dev.stack, rail)) - before).toBe(BigInt(tool.price))
        }),
        fuzzParameters('MCP paid, valid arguments', scaledRuns(8)),
      )
    },
    fuzzTimeout(60_000),
  )

  it(
    'answers malformed JSON-RPC (not JSON, arguments not an object) below 500, with no payment event',
    async () => {
      const events: PaymentEvent[] = dev.events
      const before = events.length
      const malformed = fc.oneof(
        nonJson.map((body) => ({ bytes: body.bytes })),
        fc
          .tuple(
            toolArb,
            fc.oneof(
              fc
                .jsonValue()
                .filter((v) => typeof v !== 'object' || v === null || Array.isArray(v))
                .map((v) => JSON.stringify(v)),
            ),
          )
          .map(([tool, args]) => ({
            bytes: new Uint8Array(
              Buffer.from(
                `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${tool.mcpName}","arguments":${args}}}`,
              ),
            ),
          })),
      )
      await fc.assert(
        fc.asyncProperty(malformed, async ({ bytes }) => {
          const res = await postMcpRaw(bytes)
          expect(res.status).toBeLessThan(500)
          const body = await json(res)
          expect(body.jsonrpc).toBe('2.0')
          expect(typeof body.error?.code).toBe('number')
        }),
        fuzzParameters('MCP malformed JSON-RPC', scaledRuns(40)),
      )
      expect(events.length).toBe(before)
    },
    fuzzTimeout(60_000),
  )
})
