import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { decodePaymentResponseHeader } from '@x402/core/http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../src/devnet/ports.js'
import type { DevStack } from '../src/devnet/stack.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance } from './helpers/rails.js'
import { sharedDevStack } from './helpers/service.js'

// Graceful shutdown of a real `src/main.ts` process (run with tsx, as `npm run dev` runs the
// sources) on the devnet, signalled mid-load: every call that settled got its 200, every other
// call failed without a charge, and telemetry kept every settled call across the restart.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const TSX = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href

let stack: DevStack
let dataDir: string
const children: ChildProcess[] = []

beforeAll(async () => {
  stack = await sharedDevStack()
  dataDir = mkdtempSync(join(tmpdir(), 'shutdown-e2e-'))
})
afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL')
  rmSync(dataDir, { recursive: true, force: true })
})

/** A service process on the stack; resolves once it listens. */
async function startChild(port: number): Promise<{ child: ChildProcess; exit: Promise<number> }> {
  const child = spawn(process.execPath, ['--import', TSX, 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      ...stack.serviceEnv,
      VITEST: '',
      PORT: String(port),
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      DATABASE_URL: join(dataDir, 'telemetry.sqlite'),
      TELEMETRY_SALT: 'shutdown-e2e-salt-0123456789',
      // Room for the 4 concurrent callers (1 running + 4 queued), and a worst case that fits the budget.
      TOOL_WORKERS: '1',
      TOOL_QUEUE_LIMIT: '4',
      FACILITATOR_TIMEOUT_MS: '5000',
      // A drain must leave time for one settlement: 8 s of it, the settlement ledger's two writes,
      // the telemetry write and the reply.
      FACILITATOR_SETTLE_TIMEOUT_MS: '8000',
      SHUTDOWN_TIMEOUT_MS: '15000',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  children.push(child)
  const exit = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)))
  await new Promise<void>((resolve, reject) => {
    let out = ''
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
      if (out.includes('"msg":"listening"')) resolve()
    })
    child.stderr?.on('data', (chunk: Buffer) => {
      out += chunk.toString()
    })
    exit.then((code) => reject(new Error(`service exited with ${code} before listening:\n${out}`)))
  })
  return { child, exit }
}

/** What one paid call ended with. */
type Outcome =
  | { kind: 'ok'; transaction: string; price: bigint }
  | { kind: 'status'; status: number; code: string }
  | { kind: 'connection' }

describe('graceful shutdown under paid load', () => {
  it('exits 0, answers every settled call, charges no other, and keeps every settled call in /stats', async () => {
    const port = await freePort()
    const base = `http://127.0.0.1:${port}`
    const before = await payToBalance(stack, 'evm')
    const first = await startChild(port)

    const outcomes: Outcome[] = []
    let signalled = false
    const loop = async (payer: number) => {
      const pay = await paidFetch(payerKeys(stack, 'evm', payer))
      for (let i = 0; ; i++) {
        let outcome: Outcome
        try {
          const res = await pay(`${base}/hash`, {
            method: 'POST',
            body: JSON.stringify({ input: `load ${payer} ${i}` }),
          })
          if (res.status === 200) {
            await res.arrayBuffer()
            const receipt = decodePaymentResponseHeader(res.headers.get('PAYMENT-RESPONSE') ?? '')
            outcome = { kind: 'ok', transaction: receipt.transaction, price: 1000n }
          } else {
            outcome = { kind: 'status', status: res.status, code: (await json(res)).code }
          }
        } catch {
          outcome = { kind: 'connection' }
        }
        outcomes.push(outcome)
        if (signalled && outcome.kind !== 'ok') return
      }
    }
    const loops = [loop(0), loop(0), loop(1), loop(1)]
    // Signal once calls are completing, so that some are in flight at that moment.
    while (outcomes.filter((o) => o.kind === 'ok').length < 6) {
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
    signalled = true
    first.child.kill('SIGTERM')
    expect(await first.exit).toBe(0)
    await Promise.all(loops)

    const settled = outcomes.filter((o) => o.kind === 'ok')
    const failed = outcomes.filter((o) => o.kind !== 'ok')
    expect(settled.length).toBeGreaterThanOrEqual(6)
    expect(new Set(settled.map((o) => o.transaction)).size).toBe(settled.length)
    for (const outcome of failed) {
      if (outcome.kind === 'status')
        expect(outcome).toEqual({ kind: 'status', status: 503, code: 'shutting_down' })
    }
    // Every transfer to payTo belongs to a call that got its 200: none settled without a reply.
    const charged = settled.reduce((sum, o) => sum + o.price, 0n)
    const kinds = JSON.stringify(failed)
    expect((await payToBalance(stack, 'evm')) - before, kinds).toBe(charged)

    // Telemetry was flushed before exit: a new process on the same SQLite file counts them all.
    const second = await startChild(port)
    const stats = await json(await fetch(`${base}/stats`))
    expect(stats.successful_paid_calls).toBe(settled.length)
    expect(stats.tools).toEqual({ hash: { calls: settled.length } })
    second.child.kill('SIGTERM')
    expect(await second.exit).toBe(0)
    // Two service processes started from the sources: minutes on a loaded machine, a bound on a hang.
  }, 240_000)
})
