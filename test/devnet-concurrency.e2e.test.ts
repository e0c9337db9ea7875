import { HTTPFacilitatorClient } from '@x402/core/http'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { paidFetch, payerClient } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// Issue 19: the devnet stalled under concurrent paid calls. Its facilitator sent Base
// settlements side by side under viem's nonce manager; a send that failed after taking a nonce
// left a hole or a reused nonce, and every later settlement waited in anvil's queued pool until
// FACILITATOR_TIMEOUT_MS (503). Now they are sent one at a time (src/devnet/evm-facilitator.ts).

/** Payments sent to the facilitator at once. */
const CALLS = 50
/**
 * Paid calls sent to the service at once: half as many, so that the last settlement's wait behind
 * the others (the devnet settles Base one transaction at a time) keeps its margin under
 * FACILITATOR_TIMEOUT_MS on a loaded machine. Issue 19's stall came at 4 calls at a time.
 */
const SERVICE_CALLS = 25
const HASH_PRICE = 1000n
let dev: DevService
let stack: DevStack

beforeAll(async () => {
  // The devnet's facilitator sends Base settlements one at a time, so the last of 50 settles
  // sent at once through the service waits for the 49 before it: about 2 s here, more beside
  // `stress-ng --cpu 2`; the default FACILITATOR_SETTLE_TIMEOUT_MS (20 s) covers it.
  dev = await startDevService({
    payers: 4,
    clock: { nowSeconds: () => 1_700_000_000 },
    env: { TOOL_WORKERS: '2' },
  })
  stack = dev.stack
})
afterAll(() => dev?.stop())

/**
 * A paid call with the official client, sent again (a new payment) while the service answers
 * `503 overloaded`: 50 calls at once exceed its worker queue on a busy machine, and a refused
 * call is never verified nor charged. Any other answer is returned as it came.
 */
async function payThroughOverload(
  pay: typeof fetch,
  url: string,
  body: string,
): Promise<[number, string | undefined]> {
  for (let attempt = 1; ; attempt++) {
    const res = await pay(url, { method: 'POST', body })
    const { code } = (await json(res)) as { code?: string }
    if (res.status !== 503 || code !== 'overloaded' || attempt === 10) return [res.status, code]
    await new Promise((r) => setTimeout(r, Number(res.headers.get('retry-after') ?? 1) * 1000))
  }
}

describe.each<Rail>(['evm', 'solana'])('%s rail under concurrent payments', (rail) => {
  it(`answers ${SERVICE_CALLS} paid calls sent at once with 200 and moves exactly their price`, async () => {
    const before = await payToBalance(stack, rail)
    const pay = await paidFetch(payerKeys(stack, rail, 0), rail)
    const outcomes = await Promise.all(
      Array.from({ length: SERVICE_CALLS }, (_, i) =>
        payThroughOverload(pay, `${dev.svc.baseUrl}/hash`, JSON.stringify({ input: `call ${i}` })),
      ),
    )
    expect(outcomes).toEqual(Array(SERVICE_CALLS).fill([200, undefined]))
    expect(await payToBalance(stack, rail)).toBe(before + BigInt(SERVICE_CALLS) * HASH_PRICE)
  })

  it(`settles ${CALLS} payments sent to the facilitator at once, each twice, exactly once each`, async () => {
    const facilitator = new HTTPFacilitatorClient({ url: stack.facilitatorUrl })
    const client = await payerClient(payerKeys(stack, rail, 1), rail)
    const unpaid = await fetch(`${dev.svc.baseUrl}/hash`, { method: 'POST', body: '{}' })
    const offered = JSON.parse(
      Buffer.from(unpaid.headers.get('payment-required') ?? '', 'base64').toString(),
    ) as { accepts: PaymentRequirements[] }
    const requirements = offered.accepts.find((r) =>
      r.network.startsWith(rail === 'evm' ? 'eip155:' : 'solana:'),
    ) as PaymentRequirements
    const payloads: PaymentPayload[] = await Promise.all(
      Array.from({ length: CALLS }, () =>
        client.createPaymentPayload({
          x402Version: 2,
          resource: { url: `${dev.svc.baseUrl}/hash` },
          accepts: [requirements],
        }),
      ),
    )
    const before = await payToBalance(stack, rail)
    // Each payment twice at once, as a retry after a lost answer would: the second settle fails
    // after the first has taken its place (on Base: gas estimation of a used authorization).
    const results = await Promise.all(
      payloads.flatMap((payload) => [
        facilitator.settle(payload, requirements),
        facilitator.settle(payload, requirements),
      ]),
    )
    const settled = results.filter((r) => r.success)
    expect(settled).toHaveLength(CALLS)
    expect(new Set(settled.map((r) => r.transaction)).size).toBe(CALLS)
    expect(await payToBalance(stack, rail)).toBe(before + BigInt(CALLS) * HASH_PRICE)
    if (rail === 'solana') {
      // Every landed transfer keeps its status, however many landed after it (litesvm forgot
      // all but the last 32, and their confirmations timed out).
      const statuses = await fetch(stack.solana.rpcUrl, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          jsonrpc: '2.0',
          id: 1,
          method: 'getSignatureStatuses',
          params: [settled.map((r) => r.transaction)],
        }),
      }).then((res) => res.json() as Promise<{ result: { value: unknown[] } }>)
      expect(statuses.result.value).toEqual(
        Array(CALLS).fill(expect.objectContaining({ confirmationStatus: 'finalized', err: null })),
      )
    }
    const refusals = results.filter((r) => !r.success).map((r) => r.errorReason)
    expect(refusals).toEqual(
      Array(CALLS).fill(
        rail === 'evm' ? 'invalid_exact_evm_nonce_already_used' : 'duplicate_settlement',
      ),
    )

    // And the rail still settles at once afterwards: nothing is left queued behind a hole.
    const next = await client.createPaymentPayload({
      x402Version: 2,
      resource: { url: `${dev.svc.baseUrl}/hash` },
      accepts: [requirements],
    })
    expect(await facilitator.settle(next, requirements)).toMatchObject({ success: true })
    expect(await payToBalance(stack, rail)).toBe(before + BigInt(CALLS + 1) * HASH_PRICE)
  })
})
