import { type ChildProcess, spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import type { Address } from 'viem'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { paidFetch } from '../src/devnet/payer.js'
import { freePort } from '../src/devnet/ports.js'
import { usdcBalance } from '../src/devnet/usdc.js'

// `npm run dev` where litesvm's native binary is absent (as on a platform the registry has no
// build for, litesvm 1.5.0 on darwin-arm64): a preload makes every `litesvm-<platform>` package and
// `.node` file unresolvable, as npm's skipped optional dependency leaves them. The demo must say
// in its first line that Solana is off and why, and run the Base rail alone: pay on Base, offer
// Base only, list Base only.

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const DONE = 'Ctrl-C stops the service, the chains and the facilitator.'
const PLATFORM = `${process.platform}-${process.arch}`

const HIDE_LITESVM = `
const Module = require('node:module')
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (/^litesvm-/.test(request) || /litesvm\\.[\\w-]+\\.node$/.test(request)) {
    const error = new Error("Cannot find module '" + request + "'")
    error.code = 'MODULE_NOT_FOUND'
    throw error
  }
  return resolve.call(this, request, ...rest)
}
`

let child: ChildProcess
let exited: Promise<number | null>
let base: string
const lines: string[] = []
const errors: string[] = []

/** Resolves when a stdout line matches, or rejects after `ms` (or when the demo exits). */
function lineMatching(test: (line: string) => boolean, ms: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const poll = () => {
      const found = lines.find(test)
      if (found !== undefined) return resolve(found)
      if (Date.now() - started > ms || child.exitCode !== null) {
        return reject(
          new Error(
            `no such line after ${Date.now() - started} ms (exit ${child.exitCode}); stdout:\n` +
              `${lines.join('\n')}\nstderr:\n${errors.join('')}`,
          ),
        )
      }
      setTimeout(poll, 100)
    }
    poll()
  })
}

/** The value of `NAME=value` in the "Try it" block. */
function tryItValue(name: string): string {
  const value = lines.map((l) => new RegExp(`${name}=(\\S+)`).exec(l)?.[1]).find((v) => v)
  if (!value) throw new Error(`no ${name}= in the demo's output`)
  return value
}

beforeAll(async () => {
  const hook = join(mkdtempSync(join(tmpdir(), 'no-litesvm-')), 'hide-litesvm.cjs')
  writeFileSync(hook, HIDE_LITESVM)
  const port = await freePort()
  base = `http://127.0.0.1:${port}`
  child = spawn('npm', ['run', '-s', 'dev'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      PORT: String(port),
      NODE_OPTIONS: `--require ${hook}`,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    // Its own process group: npm, tsx and the demo are stopped together.
    detached: true,
  })
  exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
  let partial = ''
  child.stdout?.on('data', (chunk: Buffer) => {
    const parts = (partial + chunk.toString('utf8')).split('\n')
    partial = parts.pop() ?? ''
    lines.push(...parts)
  })
  child.stderr?.on('data', (chunk: Buffer) => errors.push(chunk.toString('utf8')))
  await lineMatching((l) => l === DONE, 240_000)
}, 300_000)

afterAll(async () => {
  if (!child?.pid || child.exitCode !== null) return
  // Ctrl-C to the group first, so that the demo stops its chain and facilitator; SIGKILL if it hangs.
  process.kill(-child.pid, 'SIGINT')
  const timer = setTimeout(() => child.pid && process.kill(-child.pid, 'SIGKILL'), 30_000)
  await exited
  clearTimeout(timer)
}, 120_000)

describe('npm run dev without litesvm', () => {
  it('says first, in one line, that Solana is off: the platform, the missing package, how to get it', () => {
    const [first] = lines
    expect(first).toMatch(
      new RegExp(
        `^npm run dev: Solana is off: the local Solana VM \\(litesvm\\) cannot load on ${PLATFORM}, its native binary is not installed \\(no \`litesvm-${PLATFORM}[\\w-]*\` in node_modules\\), so the demo runs Base alone\\. `,
      ),
    )
    expect(first).toContain('to get Solana, run `npm install` again')
    expect(lines.join('\n')).not.toContain('npm/cli/issues/4828')
    expect(lines[1]).toMatch(
      /^Payload Tools dev stack up in \d+ ms \(X402_NETWORK=mainnet: Base only; Solana is off, see the first line\)$/,
    )
    expect(lines).toContain(
      'Demo payer pays for every tool on Base from a prepaid channel (batch-settlement: one deposit, then vouchers):',
    )
    expect(lines.filter((l) => /Solana/.test(l) && l !== first && l !== lines[1])).toEqual([])
  })

  it('pays for every tool on Base, each call answered 200, and prints no Solana command', () => {
    const paid = lines.filter((l) => /^ {2}\d{3} \//.test(l))
    expect(paid).toHaveLength(8)
    expect(paid.filter((l) => !l.startsWith('  200 '))).toEqual([])
    expect(
      lines.filter((l) => /PAYER_SOLANA_SECRET_KEY|--rail solana|SOLANA_RPC_URL/.test(l)),
    ).toEqual([])
    expect(lines).toContain('Try it:')
    expect(lines.some((l) => l.includes('npm run pay -- hash'))).toBe(true)
  })

  it("offers Base alone in the 402, and a paid call answers 200 and adds the price to payTo's Base balance", async () => {
    const body = JSON.stringify({ input: 'abc' })
    const init = { method: 'POST', headers: { 'Content-Type': 'application/json' }, body }
    const unpaid = await fetch(`${base}/hash`, init)
    expect(unpaid.status).toBe(402)
    const required = decodePaymentRequiredHeader(unpaid.headers.get('PAYMENT-REQUIRED') ?? '')
    // Base alone: `exact`, and the prepaid channels beside it.
    expect(required.accepts.map((a) => [a.scheme, a.network])).toEqual([
      ['exact', 'eip155:8453'],
      ['batch-settlement', 'eip155:8453'],
    ])
    const [offer] = required.accepts
    if (!offer) throw new Error('no offer')

    const rpcUrl = /^ {2}Base +(http:\/\/\S+) {2}\(anvil/.exec(
      lines.find((l) => l.startsWith('  Base ')) ?? '',
    )?.[1]
    if (!rpcUrl) throw new Error("no Base RPC URL in the demo's output")
    const payTo = offer.payTo as Address
    const before = await usdcBalance(rpcUrl, payTo)
    const pay = await paidFetch({ evmPrivateKey: tryItValue('PAYER_PRIVATE_KEY') as `0x${string}` })
    const res = await pay(`${base}/hash`, init)
    expect(res.status).toBe(200)
    expect(await res.json()).toMatchObject({ ok: true })
    expect(await usdcBalance(rpcUrl, payTo)).toBe(before + BigInt(offer.amount))
  })

  it('runs the facilitator with the EVM schemes alone', async () => {
    const facilitator = /^ {2}facilitator +(http:\/\/\S+) /.exec(
      lines.find((l) => l.startsWith('  facilitator ')) ?? '',
    )?.[1]
    expect(lines).toContain(
      `  facilitator  ${facilitator}  (official @x402/core facilitator, exact EVM, batch-settlement EVM)`,
    )
    const supported = (await (await fetch(`${facilitator}/supported`)).json()) as {
      kinds: { network: string }[]
    }
    expect(supported.kinds.length).toBeGreaterThan(0)
    expect(supported.kinds.filter((k) => !k.network.startsWith('eip155:'))).toEqual([])
  })

  it('lists Base alone on /health and the landing page', async () => {
    const health = (await (await fetch(`${base}/health`)).json()) as {
      checks: { rails: { status: string; networks: { network: string }[] } }
    }
    expect(health.checks.rails.status).toBe('ok')
    expect(health.checks.rails.networks.map((n) => n.network)).toEqual(['eip155:8453'])
    const landing = await (await fetch(`${base}/`)).text()
    expect(landing).toContain('eip155:8453')
    expect(landing).not.toMatch(/solana/i)
  })
})
