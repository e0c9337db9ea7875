import { randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodePaymentSignatureHeader } from '@x402/core/http'
import type { PaymentPayload, PaymentRequired } from '@x402/core/types'
import { wrapFetchWithPayment } from '@x402/fetch'
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServiceInstance, type ServiceInstance } from '../src/devnet/instance.js'
import { freePort } from '../src/devnet/ports.js'
import type { DevStack } from '../src/devnet/stack.js'
import { catalog } from '../src/tools/catalog.js'
import type { ToolDefinition } from '../src/tools/types.js'
import { type PayerKeys, payerClient } from './helpers/clients.js'
import { parseExposition, total } from './helpers/metrics.js'
import { payerKeys, type Rail } from './helpers/rails.js'
import { sharedDevStack } from './helpers/service.js'

// The service as `npm start` runs it (src/main.ts in a process of its own), with LOG_LEVEL=trace:
// a full paid run on both rails over HTTP and MCP, with failures, then its log is read whole.
// - Every response carries the X-Request-Id the client sent, every failure envelope the same id,
//   and the log lines of each request carry it.
// - The log holds no body sent (each carries a random marker), no HMAC secret, no JWT, no payer
//   address in any case, no PAYMENT-SIGNATURE, signature or signed transaction.
// - The metrics listener (METRICS_PORT) serves what main.ts wired (telemetry writes included).

const TOKEN = 'logs-e2e-metrics-token-0123456789abcdef'
const tool = (id: string) => catalog.find((t) => t.id === id) as ToolDefinition
const marker = () => `mk${randomBytes(9).toString('hex')}`

let stack: DevStack
let instance: ServiceInstance
let dir: string
let metricsPort: number
/** Everything the log must never contain, with what it is. */
const secrets: { what: string; value: string }[] = []
/** The request ids sent, with what each request was. */
const sent: { id: string; what: string; status?: number; envelopeId?: unknown }[] = []
const settledCalls = { evm: 0, solana: 0 }

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'logs-e2e-'))
  stack = await sharedDevStack()
  metricsPort = await freePort()
  instance = createServiceInstance({
    name: 'logs',
    port: await freePort(),
    env: {
      ...stack.serviceEnv,
      LOG_LEVEL: 'trace',
      DATABASE_URL: join(dir, 'telemetry.sqlite'),
      TELEMETRY_SALT: 'logs-e2e-salt-0123456789',
      TOOL_WORKERS: '1',
      RATE_LIMIT_POINTS: '1000000',
      METRICS_TOKEN: TOKEN,
      METRICS_PORT: String(metricsPort),
    },
    logFile: join(dir, 'service.log'),
  })
  await instance.start()
  for (const payer of [...stack.evm.payers, ...stack.solana.payers]) {
    secrets.push({ what: 'payer address', value: payer.address })
  }
}, 240_000)
afterAll(async () => {
  await instance?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** Notes everything a payment reveals: the header, the signature, the signed transaction. */
function notePayment(payment: PaymentPayload): void {
  const inner = payment.payload as { signature?: string; transaction?: string }
  if (inner.signature) secrets.push({ what: 'EVM signature', value: inner.signature })
  if (inner.transaction) {
    secrets.push({ what: 'Solana transaction', value: inner.transaction.slice(0, 80) })
  }
}

/** A fetch that notes the PAYMENT-SIGNATURE it sends, for the official client's wrapper. */
const recordingFetch: typeof fetch = async (input, init) => {
  const request = new Request(input, init)
  const header = request.headers.get('payment-signature')
  if (header) {
    secrets.push({ what: 'PAYMENT-SIGNATURE', value: header })
    notePayment(decodePaymentSignatureHeader(header))
  }
  return fetch(request)
}

/** A paid HTTP call with the official client, under request id `id`; the body carries a marker. */
async function payHttp(id: string, keys: PayerKeys, rail: Rail, t: ToolDefinition, body: object) {
  const mark = marker()
  secrets.push({ what: `body of ${id}`, value: mark })
  const pay = wrapFetchWithPayment(recordingFetch, await payerClient(keys, rail))
  const res = await pay(`${instance.url}${t.path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', 'X-Request-Id': id },
    body: JSON.stringify({ ...body, ...(t.id === 'hash' ? { input: mark } : {}) }),
  })
  return note(id, `HTTP ${t.id} on ${rail}`, res)
}

async function note(id: string, what: string, res: Response) {
  expect(res.headers.get('x-request-id'), what).toBe(id)
  const body = (await res.json()) as Record<string, unknown>
  sent.push({ id, what, status: res.status, envelopeId: body.request_id })
  return { status: res.status, body }
}

/** A raw MCP tools/call under request id `id`. */
async function mcp(id: string, t: ToolDefinition, args: object, payment?: PaymentPayload) {
  const res = await fetch(`${instance.url}/mcp`, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      'X-Request-Id': id,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: t.mcpName,
        arguments: args,
        ...(payment ? { _meta: { 'x402/payment': payment } } : {}),
      },
    }),
  })
  expect(res.headers.get('x-request-id')).toBe(id)
  const { result } = (await res.json()) as {
    result: {
      isError?: boolean
      structuredContent: Record<string, unknown>
      _meta?: Record<string, unknown>
    }
  }
  const envelope = result._meta?.['payload-tools/failure'] as { request_id?: string } | undefined
  sent.push({
    id,
    what: `MCP ${t.id}`,
    status: result.isError ? 0 : 200,
    envelopeId: envelope?.request_id,
  })
  return result
}

/** A paid MCP call: unpaid under `${id}-402`, then paid under `id`. */
async function payMcp(id: string, keys: PayerKeys, rail: Rail, t: ToolDefinition, args: object) {
  const mark = marker()
  secrets.push({ what: `arguments of ${id}`, value: mark })
  const withMark = t.id === 'hash' ? { ...args, input: mark } : args
  const unpaid = await mcp(`${id}-402`, t, withMark)
  const client = await payerClient(keys, rail)
  const payment = await client.createPaymentPayload(
    unpaid.structuredContent as unknown as PaymentRequired,
  )
  notePayment(payment)
  return mcp(id, t, withMark, payment)
}

describe('logs and request ids of a full paid run (LOG_LEVEL=trace)', () => {
  it('answers every call with its request id, in the header and in every failure envelope', async () => {
    const hash = tool('hash')
    const hmac = tool('hmac')
    const jwt = tool('jwt-inspect')
    const evm = payerKeys(stack, 'evm', 0)
    const solana = payerKeys(stack, 'solana', 0)

    expect((await payHttp('http-evm-hash', evm, 'evm', hash, {})).status).toBe(200)
    expect((await payHttp('http-sol-hash', solana, 'solana', hash, {})).status).toBe(200)
    settledCalls.evm++
    settledCalls.solana++
    const secret = `hmac-secret-${marker()}`
    secrets.push({ what: 'HMAC secret', value: secret })
    const macInput = marker()
    secrets.push({ what: 'body of http-evm-hmac', value: macInput })
    const mac = await payHttp('http-evm-hmac', evm, 'evm', hmac, { input: macInput, secret })
    expect(mac.status).toBe(200)
    settledCalls.evm++
    const claims = Buffer.from(JSON.stringify({ sub: marker() })).toString('base64url')
    const token = `eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.${claims}.${randomBytes(32).toString('base64url')}`
    secrets.push({ what: 'JWT', value: token }, { what: 'JWT claims', value: claims })
    const inspected = await payMcp('mcp-sol-jwt', solana, 'solana', jwt, { token })
    expect(inspected.isError).toBeUndefined()
    settledCalls.solana++
    expect((await payMcp('mcp-evm-hash', evm, 'evm', hash, {})).isError).toBeUndefined()
    settledCalls.evm++

    // Failures: a tool failure (MCP), an invalid body, a verify failure (no USDC), a garbage
    // PAYMENT-SIGNATURE.
    const notBase64 = `ab*${marker()}`
    secrets.push({ what: 'arguments of mcp-sol-base64', value: notBase64 })
    const failedTool = await payMcp(
      'mcp-sol-base64',
      payerKeys(stack, 'solana', 1),
      'solana',
      tool('base64'),
      {
        mode: 'decode',
        input: notBase64,
      },
    )
    expect(failedTool.isError).toBe(true)
    const extra = marker()
    secrets.push({ what: 'body of http-invalid', value: extra })
    const invalid = await payHttp('http-invalid', evm, 'evm', hash, { extra })
    expect(invalid.status).toBe(400)
    const brokeKey = generatePrivateKey()
    secrets.push({ what: 'unfunded payer', value: privateKeyToAccount(brokeKey).address })
    const broke = await payHttp('http-broke', { evmPrivateKey: brokeKey }, 'evm', hash, {})
    expect([broke.status, broke.body.code]).toEqual([402, 'payment_verification_failed'])
    const garbage = `${marker()}%%`
    secrets.push({ what: 'garbage PAYMENT-SIGNATURE', value: garbage })
    const bad = await fetch(`${instance.url}/hash`, {
      method: 'POST',
      headers: { 'X-Request-Id': 'http-garbage', 'PAYMENT-SIGNATURE': garbage },
      body: '{"input":"x"}',
    })
    expect((await note('http-garbage', 'garbage signature', bad)).body.code).toBe('invalid_payment')
    // A malformed id is replaced by a UUID.
    const replaced = await fetch(`${instance.url}/hash`, {
      method: 'POST',
      headers: { 'X-Request-Id': 'not a valid id' },
    })
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/)
    await replaced.text()

    for (const request of sent) {
      if (request.status !== 200) expect(request.envelopeId, request.what).toBe(request.id)
    }
  })

  it('carries the request id on the log lines of each request', async () => {
    const lines = readLog()
    const byId = new Map<string, Record<string, unknown>[]>()
    for (const line of lines) {
      if (typeof line.request_id !== 'string') continue
      byId.set(line.request_id, [...(byId.get(line.request_id) ?? []), line])
    }
    // The request line of every request (unpaid 402s are logged at debug, the rest at info).
    for (const { id, what } of sent) {
      const requestLines = (byId.get(id) ?? []).filter((l) => l.msg === 'request')
      expect(requestLines.length, what).toBeGreaterThanOrEqual(1)
    }
    // Lines written deep inside a request by other layers carry its id: the MCP adapter's.
    expect(byId.get('mcp-sol-base64')?.map((l) => l.msg)).toEqual(
      expect.arrayContaining(['mcp tools/call failed', 'request']),
    )
    // Lines outside any request (start-up) carry none.
    const listening = lines.find((l) => l.msg === 'listening')
    expect(listening).toBeDefined()
    expect(listening?.request_id).toBeUndefined()
  })

  it('keeps bodies, secrets, payer addresses and payment signatures out of the log', () => {
    const text = readFileSync(instance.logFile, 'utf8')
    const lower = text.toLowerCase()
    expect(secrets.length).toBeGreaterThan(15)
    for (const { what, value } of secrets) {
      expect(lower.includes(value.toLowerCase()), `${what} in the log`).toBe(false)
      if (value.startsWith('0x')) {
        expect(lower.includes(value.slice(2).toLowerCase()), `${what} without 0x`).toBe(false)
      }
    }
    expect(text).not.toMatch(/eyJ[A-Za-z0-9_-]{5,}\.eyJ/)
  })

  it('serves the metrics main.ts wired, on METRICS_PORT and to the token on the service port', async () => {
    const onPort = await fetch(`http://127.0.0.1:${metricsPort}/metrics`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    })
    expect(onPort.status).toBe(200)
    const samples = parseExposition(await onPort.text())
    for (const rail of ['evm', 'solana'] as const) {
      const network = rail === 'evm' ? 'eip155:8453' : stack.solana.network
      expect(total(samples, 'x402_payments_total', { outcome: 'settled', network })).toBe(
        settledCalls[rail],
      )
    }
    // Two writes (verified, settled) per settled call plus two for the tool failure.
    const writes = total(samples, 'telemetry_write_duration_seconds_count', { result: 'ok' })
    expect(writes).toBe(2 * (settledCalls.evm + settledCalls.solana) + 2)
    expect((await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).status).toBe(404)
    const onService = await fetch(`${instance.url}/metrics`, {
      headers: { Authorization: `Bearer ${TOKEN}` },
    })
    expect(onService.status).toBe(200)
    await onService.text()
  })
})

function readLog(): Record<string, unknown>[] {
  return readFileSync(instance.logFile, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
}
