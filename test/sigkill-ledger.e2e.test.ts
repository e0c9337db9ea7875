import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { x402HTTPClient } from '@x402/core/client'
import { encodePaymentSignatureHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createServiceInstance, type ServiceInstance } from '../src/devnet/instance.js'
import { freePort } from '../src/devnet/ports.js'
import type { DevFacilitator, DevStack } from '../src/devnet/stack.js'
import { payerClient } from './helpers/clients.js'
import { payerKeys, payToBalance, type Rail } from './helpers/rails.js'
import { sharedDevStack } from './helpers/service.js'

// Issue 30: a SIGKILL in the middle of paid calls loses no settlement from /stats. The service
// runs as its own process (src/main.ts) on SQLite telemetry with the chain judge; 30 paid calls on
// both rails go out six at a time through a facilitator slowed to 1.5 s a settle, and the process
// is killed while settles are in flight (they land; their answers and telemetry writes are lost).
// After a restart, the resolver decides the intents in doubt on chain: /stats must equal the
// transfers on chain within 60 s, and stay so (none counted twice).

const PRICE = 1000n
const CALLS = 30
const AT_ONCE = 6
let dir: string
let stack: DevStack
let facilitator: DevFacilitator
let instance: ServiceInstance

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'sigkill-ledger-'))
  stack = await sharedDevStack()
  facilitator = stack.facilitators[0] as DevFacilitator
  instance = createServiceInstance({
    name: 'sigkill',
    port: await freePort(),
    env: {
      ...stack.serviceEnv,
      DATABASE_URL: join(dir, 'telemetry.sqlite'),
      TELEMETRY_SALT: 'sigkill-ledger-salt-0123456789',
      EVM_RPC_URL: stack.evm.rpcUrl,
      SOLANA_RPC_URL: stack.solana.rpcUrl,
      TOOL_WORKERS: '2',
      RATE_LIMIT_POINTS: '1000000',
    },
    logFile: join(dir, 'service.log'),
  })
  await instance.start()
}, 240_000)
afterAll(async () => {
  facilitator.faults.settleDelayMs = 0
  await instance?.stop()
  rmSync(dir, { recursive: true, force: true })
})

/** One paid /hash call of payer `index` on `rail`; resolves with its status, or 0 when cut. */
async function paidCall(rail: Rail, index: number, n: number): Promise<number> {
  const input = `{"input":"sigkill ${n}"}`
  try {
    const unpaid = await fetch(`${instance.url}/hash`, { method: 'POST', body: input })
    if (unpaid.status !== 402) return unpaid.status
    const client = new x402HTTPClient(await payerClient(payerKeys(stack, rail, index), rail))
    const payment = await client.createPaymentPayload(
      client.getPaymentRequiredResponse((name) => unpaid.headers.get(name)),
    )
    const res = await fetch(`${instance.url}/hash`, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment),
      },
      body: input,
    })
    await res.arrayBuffer()
    return res.status
  } catch {
    return 0
  }
}

const stats = async () => {
  const res = await fetch(`${instance.url}/stats`)
  return res.ok ? ((await res.json()) as { successful_paid_calls: number }) : undefined
}

describe('SIGKILL during paid calls', () => {
  it('restarts with /stats equal to the transfers on chain within 60 s, none counted twice', async () => {
    const before = {
      evm: await payToBalance(stack, 'evm'),
      solana: await payToBalance(stack, 'solana'),
    }
    facilitator.faults.settleDelayMs = 1_500
    const statuses: number[] = []
    let next = 0
    let settlesSeen = facilitator.received.filter((r) => r.op === 'settle').length
    const firstSettles = settlesSeen
    const worker = async () => {
      for (let n = next++; n < CALLS; n = next++) {
        const rail: Rail = n % 2 === 0 ? 'evm' : 'solana'
        statuses.push(await paidCall(rail, n % 4, n))
      }
    }
    const workers = Array.from({ length: AT_ONCE }, worker)
    // Killed once a dozen settles have started: several are in flight at the facilitator.
    const deadline = Date.now() + 120_000
    while (Date.now() < deadline) {
      settlesSeen = facilitator.received.filter((r) => r.op === 'settle').length
      if (settlesSeen - firstSettles >= 12) break
      await new Promise((r) => setTimeout(r, 50))
    }
    expect(instance.kill('SIGKILL')).toBe(true)
    await Promise.all(workers)
    // The settles in flight finish at the facilitator (it outlives the service), then stop.
    await new Promise((r) => setTimeout(r, 3_000))
    facilitator.faults.settleDelayMs = 0
    const landed =
      ((await payToBalance(stack, 'evm')) - before.evm) / PRICE +
      ((await payToBalance(stack, 'solana')) - before.solana) / PRICE
    const answered = statuses.filter((s) => s === 200).length
    // Some calls were cut with their transfer on chain: the case under test.
    expect(Number(landed)).toBeGreaterThan(answered)

    const restarted = Date.now()
    await instance.start()
    let counted: number | undefined
    while (Date.now() - restarted < 60_000) {
      counted = (await stats())?.successful_paid_calls
      if (counted === Number(landed)) break
      await new Promise((r) => setTimeout(r, 1_000))
    }
    expect(counted, readFileSync(instance.logFile, 'utf8').slice(-3000)).toBe(Number(landed))
    // Stable: later passes count nothing again.
    await new Promise((r) => setTimeout(r, 12_000))
    expect((await stats())?.successful_paid_calls).toBe(Number(landed))
  }, 300_000)
})
