import { x402HTTPClient } from '@x402/core/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { findToolByPath } from '../src/tools/catalog.js'
import type { ToolEnv } from '../src/tools/types.js'
import {
  BACKREFERENCE,
  HOSTILE_CALLS,
  type HostileCall,
  MAX_PIPELINE,
  MAX_TEXT_DIFF,
  NESTED_QUANTIFIER,
} from './fixtures/hostile.js'
import { type PayerKeys, paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance } from './helpers/rails.js'
import { type DevService, type RunningService, startDevService } from './helpers/service.js'

// Issue 9, "No call can hold the service", end to end: the devnet (anvil, the official
// facilitator), the service over HTTP with its worker pool (2 workers, the 2 s default budget),
// and the official client paying for hostile inputs.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
let stack: DevStack
let svc: RunningService
let events: PaymentEvent[]

beforeAll(async () => {
  // A queue deadline of 8 budgets, 16 s (TOOL_QUEUE_LIMIT 16 on 2 workers): the honest call waits
  // behind two rounds of hostile calls cut at their 2 s budget and the replacement of the workers
  // they took down (seconds of tsx compiling on a loaded machine). FACILITATOR_TIMEOUT_MS 2.5 s
  // keeps the paid-call budget (the check 2 + verify 2.5 + 2 + 16 + 2 + settle and its retry 5 s)
  // within half the payment's 60 s.
  dev = await startDevService({
    payers: 3,
    clock,
    env: { TOOL_WORKERS: '2', TOOL_QUEUE_LIMIT: '16', FACILITATOR_TIMEOUT_MS: '2500' },
  })
  ;({ stack, svc, events } = dev)
})
afterAll(() => dev?.stop())

const payer = (index: number) => stack.evm.payers[index]?.address as `0x${string}`
const balances = async (index: number) => ({
  payer: await stack.evm.usdcBalance(payer(index)),
  payTo: await payToBalance(stack, 'evm'),
})

const post = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  fetch(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...headers },
    body: JSON.stringify(body),
  })

/** The PAYMENT-SIGNATURE of a call, signed by the official client from the real 402. */
async function sign(keys: PayerKeys, call: HostileCall): Promise<string> {
  const unpaid = await post(call.path, call.body)
  expect(unpaid.status).toBe(402)
  const http = new x402HTTPClient(await payerClient(keys, 'evm'))
  const payload = await http.createPaymentPayload(
    http.getPaymentRequiredResponse((name) => unpaid.headers.get(name)),
  )
  return http.encodePaymentSignatureHeader(payload)['PAYMENT-SIGNATURE'] as string
}

/**
 * One probe of a free path while the hostile calls run: its status, and how many tools were
 * running on the workers when its answer arrived.
 */
interface Probe {
  path: string
  status: number
  toolsRunning: number
}

/** Probes /health, an unpaid 402 and /stats, the three at once, every 50 ms until `done` settles. */
async function probeUntil(done: Promise<unknown>): Promise<Probe[]> {
  let finished = false
  done.finally(() => {
    finished = true
  })
  const probes: Probe[] = []
  const probe = async (request: () => Promise<Response>) => {
    const res = await request()
    await res.arrayBuffer()
    probes.push({
      path: new URL(res.url).pathname,
      status: res.status,
      toolsRunning: svc.service.runner.status().running,
    })
  }
  while (!finished) {
    await Promise.all([
      probe(() => fetch(`${svc.baseUrl}/health`)),
      probe(() => post('/hash', { input: 'probe' })),
      probe(() => fetch(`${svc.baseUrl}/stats`)),
    ])
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return probes
}

/**
 * Every probe answered as it should, and each path answered while a tool was still running on a
 * worker: the event loop served them during the tool, not after it. (An order, not a duration:
 * it holds however slow a loaded machine is. The latencies are `npm run bench`'s, section 5.)
 */
function expectResponsive(probes: Probe[]) {
  const expected: Record<string, number> = { '/health': 200, '/hash': 402, '/stats': 503 }
  for (const probe of probes) expect(probe.status, probe.path).toBe(expected[probe.path])
  const duringTools = new Set(probes.filter((p) => p.toolsRunning > 0).map((p) => p.path))
  expect([...duringTools].sort()).toEqual(['/hash', '/health', '/stats'])
}

describe('tool calls that would hold the service', () => {
  it('answers the nested-quantifier pattern at once (V8 linear fallback) and charges its price', async () => {
    const before = await balances(0)
    const pay = await paidFetch(payerKeys(stack, 'evm', 0))
    const res = await pay(`${svc.baseUrl}/json-validate`, {
      method: 'POST',
      body: JSON.stringify(NESTED_QUANTIFIER.body),
    })
    expect(res.status).toBe(200)
    expect(await json(res)).toEqual({
      ok: true,
      result: {
        valid: false,
        error_count: 1,
        truncated: false,
        errors: [
          {
            instanceLocation: '',
            keyword: 'pattern',
            keywordLocation: '/pattern',
            error: 'pattern: must match the regular expression "^(a+)+$"; it does not.',
          },
        ],
      },
    })
    const after = await balances(0)
    expect(before.payer - after.payer).toBe(1000n)
    expect(after.payTo - before.payTo).toBe(1000n)
  })

  it('stops the backreference at its budget: 400 tool_timeout, nothing charged, /health served meanwhile', async () => {
    const before = await balances(1)
    events.length = 0
    const header = await sign(payerKeys(stack, 'evm', 1), BACKREFERENCE)
    const started = performance.now()
    const call = post(BACKREFERENCE.path, BACKREFERENCE.body, { 'PAYMENT-SIGNATURE': header })
    const probes = await probeUntil(call)
    const res = await call
    expect(res.status).toBe(400)
    expect(await json(res)).toEqual({
      ok: false,
      request_id: res.headers.get('x-request-id'),
      code: 'tool_timeout',
      error:
        'The tool did not finish within its 2000 ms budget and was stopped; nothing was charged',
    })
    expect(res.headers.get('payment-response')).toBeNull()
    expect(performance.now() - started).toBeGreaterThanOrEqual(2000)
    expect(await balances(1)).toEqual(before)
    expect(events.map((e) => [e.tool, e.outcome])).toEqual([
      ['json-validate', 'verified'],
      ['json-validate', 'tool_failed_unsettled'],
    ])
    expectResponsive(probes)
    // The payment was released, not spent: the same signature pays for a call that finishes.
    const retry = await post(NESTED_QUANTIFIER.path, NESTED_QUANTIFIER.body, {
      'PAYMENT-SIGNATURE': header,
    })
    expect(retry.status).toBe(200)
    expect((await balances(1)).payer).toBe(before.payer - 1000n)
  })

  it('keeps /health, the 402 and /stats responsive and serves an honest call under 4 hostile calls', async () => {
    const keys = payerKeys(stack, 'evm', 2)
    const before = await balances(2)
    const headers: string[] = []
    for (const call of HOSTILE_CALLS) headers.push(await sign(keys, call))
    const hostile = HOSTILE_CALLS.map((call, i) =>
      post(call.path, call.body, { 'PAYMENT-SIGNATURE': headers[i] as string }),
    )
    const pay = await paidFetch(keys)
    const honest = pay(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"abc"}' })
    const all = Promise.all([...hostile, honest])
    const probes = await probeUntil(all)
    const responses = await all
    const bodies = await Promise.all(responses.map((r) => json(r)))
    // Workers stopped at their budget are replaced, which takes seconds of tsx compiling on a
    // loaded machine: the honest call may outwait its queue deadline and get 503 overloaded, which
    // charges nothing and says when to retry. A client retries; it is served then.
    for (let tries = 0; responses[4]?.status === 503 && tries < 10; tries++) {
      expect((bodies[4] as { code?: string }).code).toBe('overloaded')
      const wait = Number(responses[4].headers.get('retry-after') ?? 1) * 1000
      await new Promise((resolve) => setTimeout(resolve, wait))
      responses[4] = await pay(`${svc.baseUrl}/hash`, { method: 'POST', body: '{"input":"abc"}' })
      bodies[4] = await json(responses[4])
    }

    const honestBody = bodies[4] as { result: { hex: string }; code?: string }
    expect([responses[4]?.status, honestBody.code]).toEqual([200, undefined])
    expect(honestBody.result.hex).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
    const outcome = (call: HostileCall) => {
      const i = HOSTILE_CALLS.indexOf(call)
      return responses[i]?.status === 200 ? 200 : bodies[i]?.code
    }
    expect(outcome(NESTED_QUANTIFIER)).toBe(200)
    // Exponential backtracking (2^28 paths): minutes of CPU on any machine, far beyond the budget.
    expect(outcome(BACKREFERENCE)).toBe('tool_timeout')
    // 12 percent-encodings of 1 MiB (about 1.2 s of CPU here) and the largest text-diff (about
    // 1.4 s): done or stopped, depending on the machine's load; charged only if done, as checked
    // below. (Issue 19: the pipeline once finished within the budget and answered 200.) They wait
    // behind the first two for a worker, and a loaded machine may take longer than their queue
    // deadline to replace the workers the first two took down: then they are refused unrun,
    // `overloaded`, charging nothing (under `stress-ng --cpu 2`, the pipeline once).
    expect([200, 'tool_timeout', 'overloaded']).toContain(outcome(MAX_PIPELINE))
    expect([200, 'tool_timeout', 'overloaded']).toContain(outcome(MAX_TEXT_DIFF))

    // The payer paid exactly the prices of the calls that answered 200, and payTo got them.
    const charged = responses.reduce((sum, res, i) => {
      const path = i < HOSTILE_CALLS.length ? (HOSTILE_CALLS[i] as HostileCall).path : '/hash'
      return res.status === 200 ? sum + BigInt(findToolByPath(path)?.price ?? 0) : sum
    }, 0n)
    const after = await balances(2)
    expect(before.payer - after.payer).toBe(charged)
    expect(after.payTo - before.payTo).toBe(charged)
    expectResponsive(probes)
  })
})
