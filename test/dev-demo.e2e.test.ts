import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { x402HTTPClient } from '@x402/core/client'
import { decodePaymentResponseHeader, encodePaymentSignatureHeader } from '@x402/core/http'
import { createTestClient, type Hex, http } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../src/devnet/ports.js'
import { catalog } from '../src/tools/catalog.js'
import { payerClient } from './helpers/clients.js'

// `npm run dev` as a newcomer runs it: the demo process (tsx src/devnet/demo.ts, without
// LOG_LEVEL), on a free port. After the demo it must log every request at info, say so, and print
// the landing page's URL as a URL (not a macOS `open` command). It runs with the chain judge and
// the settlement resolver, as production does; a settle budget of 3 s (instead of 20) lets the
// test leave a settlement in doubt quickly.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DONE = 'Ctrl-C stops the service, the chains and the facilitator.'
let child: ChildProcess
let port: number
const lines: string[] = []
let exited: Promise<number | null>

/** Resolves when a stdout line matches, or rejects after `ms`. */
function lineMatching(test: (line: string) => boolean, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const poll = () => {
      const found = lines.find(test)
      if (found !== undefined) return resolve(found)
      if (Date.now() - started > ms) {
        return reject(new Error(`no such line after ${ms} ms; stdout:\n${lines.join('\n')}`))
      }
      setTimeout(poll, 100)
    }
    poll()
  })
}

beforeAll(async () => {
  port = await freePort()
  child = spawn(`${ROOT}node_modules/.bin/tsx`, ['src/devnet/demo.ts'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      FACILITATOR_SETTLE_TIMEOUT_MS: '3000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  let partial = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n')
    partial = parts.pop() ?? ''
    lines.push(...parts)
  })
  await lineMatching((l) => l === DONE, 240_000)
}, 300_000)
afterAll(async () => {
  if (!child || child.exitCode !== null) return
  // Ctrl-C first, so that the demo stops its chains and facilitator; SIGKILL if it hangs.
  child.kill('SIGINT')
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000)
  await exited
  clearTimeout(timer)
}, 120_000)

describe('npm run dev', () => {
  it('pays for every tool on both rails, each call answered 200: the service listens once its workers are ready', () => {
    const paid = lines.filter((l) => /^ {2}\d{3} \//.test(l))
    expect(paid).toHaveLength(16)
    expect(paid.filter((l) => !l.startsWith('  200 '))).toEqual([])
  })

  it('pays the Base calls from a prepaid channel: one deposit, then vouchers, and says so', () => {
    const header = lines.findIndex((l) => l.startsWith('Demo payer pays for every tool on Base'))
    expect(lines[header]).toBe(
      'Demo payer pays for every tool on Base from a prepaid channel (batch-settlement: one deposit, then vouchers):',
    )
    const base = lines.slice(header + 1, header + 1 + catalog.length)
    expect(base.map((l) => /^ {2}200 \S+ +\d+ ms {2}(\w+)/.exec(l)?.[1])).toEqual([
      'deposit',
      ...Array(catalog.length - 1).fill('voucher'),
    ])
    const charged = catalog.reduce((sum, t) => sum + Number(t.price), 0) / 1e6
    expect(lines[header + 1 + catalog.length]).toMatch(
      new RegExp(
        `^ {2}channel 0x[0-9a-f]{4}…[0-9a-f]{4}: ${charged} USDC charged of its 1 USDC deposit; 1 transaction \\(deposit\\), ${catalog.length - 1} vouchers$`,
      ),
    )
    // The Solana calls pay exact, each with its transaction.
    const solana = lines.findIndex((l) => l.startsWith('Demo payer pays for every tool on Solana'))
    expect(
      lines.slice(solana + 1, solana + 1 + catalog.length).every((l) => / ms {2}tx \w/.test(l)),
    ).toBe(true)
  })

  it('prints the landing page as a URL, not as a macOS open command', () => {
    expect(lines).toContain(
      `  http://127.0.0.1:${port}/  (the landing page with live figures: open it in a browser)`,
    )
    expect(lines.filter((l) => /^\s*open\s/.test(l))).toEqual([])
  })

  it('says it logs at info and how to change it, then logs each request as a pretty line', async () => {
    expect(lines).toContain(
      'Logging at info: one line per request on stdout (unpaid 402s at debug), refused ' +
        'payments and 429s included. LOG_LEVEL=debug npm run dev shows more, LOG_LEVEL=warn less; ' +
        'LOG_FORMAT=json prints the JSON lines the service writes in production.',
    )
    const res = await fetch(`http://127.0.0.1:${port}/no-such-path`)
    expect(res.status).toBe(404)
    // Pretty, for a person: the time, the level and the message, then the fields on one line.
    const line = await lineMatching((l) => l.includes('"path":"/no-such-path"'), 30_000)
    const [, time, fields] = /^\[(\d\d:\d\d:\d\d)\] INFO: request (\{.*\})$/.exec(line) ?? []
    expect(time).toBeDefined()
    expect(JSON.parse(fields ?? '{}')).toMatchObject({
      method: 'GET',
      path: '/no-such-path',
      status: 404,
    })
  })

  it('runs with the chain judge and the resolver: a settle in doubt that lands is counted by the resolver and delivered on the retry of the same payment', async () => {
    const base = `http://127.0.0.1:${port}`
    expect(lines).toContain(
      '  judge        EVM_RPC_URL, SOLANA_RPC_URL set to the chains above: settlements in doubt ' +
        'are decided on chain, the resolver passing every 10 s',
    )
    const rpcUrl = lines
      .map((l) => /^ {2}Base +(http:\/\/\S+) {2}\(anvil/.exec(l)?.[1])
      .find((url) => url !== undefined)
    const key = /PAYER_PRIVATE_KEY=(0x[0-9a-f]{64})/.exec(lines.join('\n'))?.[1] as Hex | undefined
    if (!rpcUrl || !key) throw new Error(`no RPC URL or payer key in:\n${lines.join('\n')}`)
    const anvil = createTestClient({ mode: 'anvil', transport: http(rpcUrl) })
    const stats = async () => {
      const body = (await (await fetch(`${base}/stats`)).json()) as {
        successful_paid_calls: number
      }
      return body.successful_paid_calls
    }
    const input = 'judged in the demo'
    const body = JSON.stringify({ input })
    const post = (headers: Record<string, string> = {}) =>
      fetch(`${base}/hash`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json', ...headers },
        body,
      })
    const unpaid = await post()
    expect(unpaid.status).toBe(402)
    const client = new x402HTTPClient(await payerClient({ evmPrivateKey: key }))
    const payment = await client.createPaymentPayload(
      client.getPaymentRequiredResponse((name) => unpaid.headers.get(name)),
    )
    const signature = { 'PAYMENT-SIGNATURE': encodePaymentSignatureHeader(payment) }
    const before = await stats()
    // The facilitator's transaction waits in the mempool past the settle budget: in doubt.
    await anvil.setAutomine(false)
    try {
      const first = await post(signature)
      expect([first.status, ((await first.json()) as { code?: string }).code]).toEqual([
        503,
        'settlement_unknown',
      ])
      await anvil.mine({ blocks: 1 })
    } finally {
      await anvil.setAutomine(true)
    }
    // No retry yet: the resolver judges the intent on chain and counts it (a pass every 10 s,
    // /stats cached 2 s).
    const deadline = Date.now() + 40_000
    while ((await stats()) === before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 1000))
    }
    expect(await stats()).toBe(before + 1)
    // The payer's retry of the same payment: delivered from the chain, not refused by the
    // facilitator for its used nonce (what happens without a judge).
    const retried = await post(signature)
    expect(retried.status).toBe(200)
    const digest = createHash('sha256').update(input)
    expect(await retried.json()).toEqual({
      ok: true,
      result: {
        algorithm: 'SHA-256',
        input_bytes: Buffer.byteLength(input),
        hex: digest.copy().digest('hex'),
        base64: digest.digest('base64'),
      },
    })
    const settlement = decodePaymentResponseHeader(retried.headers.get('payment-response') ?? '')
    expect(settlement).toMatchObject({ success: true, network: 'eip155:8453' })
    expect(await stats()).toBe(before + 1)
  }, 120_000)

  it('stops on Ctrl-C (SIGINT)', async () => {
    child.kill('SIGINT')
    expect(await exited).toBe(0)
  }, 120_000)
})
