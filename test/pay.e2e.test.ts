import { execFile } from 'node:child_process'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { getBase58Decoder } from '@solana/kit'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import type { ToolEnv } from '../src/tools/types.js'
import { payToBalance } from './helpers/rails.js'
import { type DevService, startDevService } from './helpers/service.js'

// `npm run -s pay` as a user scripts it (the documented form: -s keeps npm's own banner off
// stdout), against the service on the devnet with the official client: stdout must be the JSON
// answer alone, and an invalid body must stop at the 402's free input check, before signing.

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let dev: DevService
let stack: DevStack
let proxy: Server
let proxyUrl: string
/** Every request the recording proxy forwarded: whether it carried a payment. */
const seen: { path: string; signed: boolean }[] = []

beforeAll(async () => {
  dev = await startDevService({ payers: 2, clock })
  stack = dev.stack
  // In front of the service, to see whether a signed payment ever left `npm run pay`.
  proxy = createServer(async (req, res) => {
    const chunks: Buffer[] = []
    for await (const chunk of req) chunks.push(chunk as Buffer)
    const signature = req.headers['payment-signature']
    seen.push({ path: req.url ?? '', signed: signature !== undefined })
    const upstream = await fetch(`${dev.svc.baseUrl}${req.url}`, {
      method: req.method ?? 'GET',
      headers: {
        'Content-Type': 'application/json',
        ...(typeof signature === 'string' ? { 'PAYMENT-SIGNATURE': signature } : {}),
      },
      ...(req.method === 'POST' ? { body: Buffer.concat(chunks) } : {}),
    })
    res.writeHead(upstream.status, Object.fromEntries(upstream.headers))
    res.end(Buffer.from(await upstream.arrayBuffer()))
  })
  await new Promise<void>((ready) => proxy.listen(0, '127.0.0.1', ready))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
}, 180_000)
afterAll(async () => {
  proxy?.closeAllConnections()
  await new Promise((done) => proxy?.close(done))
  await dev?.stop()
})

interface PayRun {
  code: number
  stdout: string
  stderr: string
}

/** `npm run -s pay -- <args>` with `env` (and PATH, HOME), against the test service. */
async function pay(args: string[], env: Record<string, string>): Promise<PayRun> {
  try {
    const { stdout, stderr } = await run('npm', ['run', '-s', 'pay', '--', ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        SERVICE_URL: dev.svc.baseUrl,
        ...env,
      },
      timeout: 120_000,
    })
    return { code: 0, stdout, stderr }
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' }
  }
}

const evmKey = (i: number) => ({ PAYER_PRIVATE_KEY: stack.evm.payers[i]?.privateKey as string })
const solanaEnv = (i: number) => ({
  PAYER_SOLANA_SECRET_KEY: getBase58Decoder().decode(
    stack.solana.payers[i]?.secretKey as Uint8Array,
  ),
  SOLANA_RPC_URL: stack.solana.rpcUrl,
})

describe('npm run pay', () => {
  it('prints the JSON answer alone on stdout and the status lines on stderr (Base)', async () => {
    const before = await payToBalance(stack, 'evm')
    const result = await pay(['hash', '{"input":"abc"}'], evmKey(0))
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual({
      ok: true,
      result: {
        algorithm: 'SHA-256',
        input_bytes: 3,
        hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
        base64: 'ungWv48Bz+pBQUDeXa4iI7ADYaOWF3qctBD/YfIAFa0=',
      },
    })
    const lines = result.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^HTTP 200 in \d+ ms \(402 -> sign -> paid request\)$/)
    expect(lines[1]).toMatch(/^settled: true on eip155:8453, transaction 0x[0-9a-f]{64}$/)
    expect(lines[2]).toMatch(
      /^receipt: signed by the service \(key [\w-]{43}\); input digest matches, result digest matches$/,
    )
    expect((await payToBalance(stack, 'evm')) - before).toBe(1000n)
  })

  it('does the same on Solana', async () => {
    const before = await payToBalance(stack, 'solana')
    const result = await pay(
      ['--rail', 'solana', 'pipeline', '{"input":"hi","operations":[{"type":"sha256"}]}'],
      solanaEnv(0),
    )
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true })
    expect(result.stderr).toMatch(
      new RegExp(
        `^HTTP 200 in \\d+ ms \\(402 -> sign -> paid request\\)\\nsettled: true on ${stack.solana.network}, transaction \\w+\\nreceipt: signed by the service \\(key [\\w-]{43}\\); input digest matches, result digest matches\\n$`,
      ),
    )
    expect((await payToBalance(stack, 'solana')) - before).toBe(3000n)
  })

  it('resends the same payment when the facilitator loses the settle answer (settlement_unknown)', async () => {
    const facilitator = stack.facilitators[0] as (typeof stack.facilitators)[number]
    const payer = stack.evm.payers[1]?.address as `0x${string}`
    const [payerBefore, payToBefore] = [
      await stack.evm.usdcBalance(payer),
      await payToBalance(stack, 'evm'),
    ]
    const from = facilitator.received.length
    facilitator.faults.loseNextSettleAnswers = 1
    let result: PayRun
    try {
      result = await pay(['hash', '{"input":"lost settle answer"}'], evmKey(1))
    } finally {
      facilitator.faults.loseNextSettleAnswers = 0
    }
    // The service's Retry-After (5 s) waited out, then the same PAYMENT-SIGNATURE sent again.
    expect(result.stderr).toMatch(
      /^pay: HTTP 503 settlement_unknown: the tool ran and the payment may have moved; resending the same payment \(no new signature\) in 5 s, retry 1 of 3\n/,
    )
    const resends = result.stderr.match(/resending the same payment/g) ?? []
    expect(resends.length).toBeLessThanOrEqual(3)
    const settles = facilitator.received.slice(from).filter((r) => r.op === 'settle')
    expect(settles[0]).toMatchObject({ answer: 'lost', status: 200 })
    expect(settles.length).toBeGreaterThanOrEqual(2)
    expect(settles.length).toBeLessThanOrEqual(1 + resends.length)
    expect(new Set(settles.map((r) => r.payloadSha256)).size).toBe(1)
    expect(payerBefore - (await stack.evm.usdcBalance(payer))).toBe(1000n)
    expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
    // stdout stays the service's JSON alone; a failure says the payment may have moved.
    const answer = JSON.parse(result.stdout) as { ok: boolean }
    expect(result.code).toBe(answer.ok ? 0 : 1)
    if (!answer.ok) expect(result.stderr).toContain('the payment may have moved')
  }, 90_000)

  it('stops at the free input check of an invalid body: nothing signed, nothing paid', async () => {
    const payer = stack.evm.payers[1]?.address as `0x${string}`
    const [payerBefore, payToBefore] = [
      await stack.evm.usdcBalance(payer),
      await payToBalance(stack, 'evm'),
    ]
    dev.events.length = 0
    seen.length = 0
    const result = await pay(['hash', '{"input":42}'], { ...evmKey(1), SERVICE_URL: proxyUrl })
    expect(result.code).toBe(1)
    // One unpaid request, no paid one.
    expect(seen).toEqual([{ path: '/hash', signed: false }])
    const envelope = JSON.parse(result.stdout)
    expect(envelope).toMatchObject({
      ok: false,
      code: 'payment_required',
      input_check: { valid: false, errors: [{ path: '/input', message: expect.any(String) }] },
    })
    expect(envelope.error).toBe(
      'Invalid body, fix it before paying: /input Invalid input: expected string, received number. /hash costs 0.001 USDC',
    )
    expect(Object.keys(envelope).slice(0, 2)).toEqual(['ok', 'error'])
    expect(result.stderr).toBe(
      "pay: the service's free input check refused the body, so nothing was signed or paid:\n" +
        `  /input: ${envelope.input_check.errors[0].message}\n`,
    )
    expect(dev.events).toEqual([])
    expect(await stack.evm.usdcBalance(payer)).toBe(payerBefore)
    expect(await payToBalance(stack, 'evm')).toBe(payToBefore)
  })

  it('says a missing field is required, and gives the price in USDC', async () => {
    seen.length = 0
    const result = await pay(['hmac', '{"input":"x"}'], { ...evmKey(1), SERVICE_URL: proxyUrl })
    expect(result.code).toBe(1)
    expect(seen).toEqual([{ path: '/hmac', signed: false }])
    expect(JSON.parse(result.stdout).error).toBe(
      'Invalid body, fix it before paying: /secret Required (expected string). /hmac costs 0.001 USDC',
    )
    expect(result.stderr).toContain('  /secret: Required (expected string)\n')
  })

  it('says that nothing was charged when the tool refuses a paid call', async () => {
    const before = await payToBalance(stack, 'evm')
    const result = await pay(['base64', '{"mode":"decode","input":"*"}'], evmKey(1))
    expect(result.code).toBe(1)
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: false, code: 'invalid_base64' })
    expect(result.stderr).toMatch(
      /^HTTP 400 in \d+ ms \(402 -> sign -> paid request\)\npay: the tool refused the input \(invalid_base64\); the payment was not settled: nothing was charged\n$/,
    )
    expect(await payToBalance(stack, 'evm')).toBe(before)
  })

  it('prints help for a tool without a key, a service or a request', async () => {
    const result = await pay(['hmac', '--help'], {})
    expect(result.code).toBe(0)
    expect(result.stdout).toContain('secret (string; required)')
    expect(result.stderr).toBe('')
  })

  it('refuses a body that is not JSON the same way', async () => {
    dev.events.length = 0
    seen.length = 0
    const result = await pay(['hash', '{input'], { ...evmKey(1), SERVICE_URL: proxyUrl })
    expect(result.code).toBe(1)
    expect(seen).toEqual([{ path: '/hash', signed: false }])
    expect(JSON.parse(result.stdout).input_check.valid).toBe(false)
    expect(result.stderr).toMatch(/^pay: the service's free input check refused the body/)
    expect(dev.events).toEqual([])
  })
})
