import { homedir } from 'node:os'
import { join } from 'node:path'
import { decodePaymentSignatureHeader, encodePaymentRequiredHeader } from '@x402/core/http'
import type { PaymentRequired } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { catalog } from '../tools/catalog.js'
import { hmacTool } from '../tools/hmac.js'
import { PAY_USAGE, runPay, type SettlementRetry, toolHelp } from './pay-command.js'
import { DEFAULT_CHANNELS_DIR } from './payer-channels.js'

// The command line's own refusals: nothing may be sent. The paid flows run against the devnet in
// test/pay.e2e.test.ts.

const TOOLS = 'hash, base64, hmac, json-validate, jwt-inspect, text-diff, pipeline, payload-inspect'

async function refused(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const stdout: string[] = []
  const stderr: string[] = []
  const requests: string[] = []
  const code = await runPay(
    argv,
    env,
    { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) },
    async (input) => {
      requests.push(String(input instanceof Request ? input.url : input))
      return new Response('{}', { status: 500 })
    },
  )
  return { code, stdout: stdout.join(''), stderr: stderr.join(''), requests }
}

describe('runPay refuses before any request', () => {
  it('an unknown tool, listing the tools', async () => {
    expect(await refused(['foo', '{}'], { PAYER_PRIVATE_KEY: '0x01' })).toEqual({
      code: 2,
      stdout: '',
      stderr: `pay: unknown tool "foo"; the tools are ${TOOLS}\n${PAY_USAGE}\n`,
      requests: [],
    })
  })

  it('the Solana rail without its keys, the usage on its own line', async () => {
    expect(await refused(['--rail', 'solana', 'hash', '{}'])).toEqual({
      code: 2,
      stdout: '',
      stderr: `pay: PAYER_SOLANA_SECRET_KEY and SOLANA_RPC_URL must be set\n${PAY_USAGE}\n`,
      requests: [],
    })
  })

  it('the Base rail without its key', async () => {
    const { code, stderr, requests } = await refused(['hash'])
    expect(code).toBe(2)
    expect(stderr).toBe(
      `pay: PAYER_PRIVATE_KEY is not set (the payer's EVM private key, hex)\n${PAY_USAGE}\n`,
    )
    expect(requests).toEqual([])
  })

  it.each([
    [[], 'name the tool to call'],
    [['--rail', 'tron', 'hash'], '--rail must be evm or solana, not "tron"'],
    [['hash', '{}', 'extra'], 'unexpected arguments after the body: extra'],
    [['--nope', 'hash'], "Unknown option '--nope'"],
  ])('a bad command line %j', async (argv, message) => {
    const { code, stderr, requests } = await refused(argv, { PAYER_PRIVATE_KEY: '0x01' })
    expect(code).toBe(2)
    expect(stderr.startsWith(`pay: ${message}`)).toBe(true)
    expect(stderr.endsWith(`\n${PAY_USAGE}\n`)).toBe(true)
    expect(requests).toEqual([])
  })

  it.each([
    [
      ['--scheme', 'batch-settlement', 'hash'],
      { PAYER_PRIVATE_KEY: '0x01' },
      'EVM_RPC_URL is not set (batch-settlement reads the channel from the Base chain: a JSON-RPC URL)',
    ],
    [['--refund'], { PAYER_PRIVATE_KEY: '0x01' }, 'EVM_RPC_URL is not set'],
    [['--scheme', 'upto', 'hash'], {}, '--scheme must be exact or batch-settlement, not "upto"'],
    [
      ['--rail', 'solana', '--scheme', 'batch-settlement', 'hash'],
      {},
      '--scheme batch-settlement pays on Base only: --rail evm',
    ],
    [
      ['--refund', '--scheme', 'exact'],
      {},
      '--refund is of a prepaid channel: --scheme batch-settlement',
    ],
    [['--refund', 'hash', '{}'], {}, '--refund takes a tool at most, not a body: {}'],
    [['--refund', 'nope'], { EVM_RPC_URL: 'http://127.0.0.1:1' }, 'unknown tool "nope"'],
  ])('a channel command line it cannot run: %j', async (argv, env, message) => {
    const { code, stderr, requests } = await refused(argv, env)
    expect(code).toBe(2)
    expect(stderr.startsWith(`pay: ${message}`)).toBe(true)
    expect(stderr.endsWith(`\n${PAY_USAGE}\n`)).toBe(true)
    expect(requests).toEqual([])
  })

  it('says in its usage how to pay by voucher, get the rest back, and where the records are', () => {
    expect(PAY_USAGE).toContain('[--scheme exact|batch-settlement]')
    expect(PAY_USAGE).toContain('npm run pay -- --refund [--url SERVICE_URL] [<tool>]')
    expect(PAY_USAGE).toContain(
      `PAYER_CHANNELS_DIR (the channel records kept between runs, default ${DEFAULT_CHANNELS_DIR})`,
    )
    expect(DEFAULT_CHANNELS_DIR).toBe(join(homedir(), '.payload-tools', 'channels'))
  })

  it('lists the catalogue in its usage', () => {
    expect(PAY_USAGE).toContain(`tools: ${TOOLS.replaceAll(', ', ' ')}\n`)
  })
})

// The retry of the same payment on `503 settlement_unknown`, against a scripted service in
// memory (the real one, with a facilitator that loses its answer: test/settlement-unknown.e2e).

/** Anvil's first dev key: EVM signing is offline, nothing reaches a chain. */
const PAYER = '0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80'

const REQUIRED: PaymentRequired = {
  x402Version: 2,
  error: 'Payment required',
  resource: { url: 'http://service.test/hash', description: 'hash', mimeType: 'application/json' },
  accepts: [
    {
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '1000',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
      maxTimeoutSeconds: 60,
      extra: { name: 'USD Coin', version: '2' },
    },
  ],
}

const unknown = (retryAfter?: string) =>
  Response.json(
    {
      ok: false,
      code: 'settlement_unknown',
      error: 'The tool ran, but the settlement outcome is unknown: the payment may have moved.',
      request_id: 'req-1',
    },
    { status: 503, headers: retryAfter === undefined ? {} : { 'Retry-After': retryAfter } },
  )

/**
 * Runs `npm run pay -- hash` against a service that answers the unpaid request with a 402 and
 * each paid one with the next of `paid` (the last one repeated), recording the waits.
 */
async function scripted(paid: (() => Response)[], retry: Partial<SettlementRetry> = {}) {
  const stdout: string[] = []
  const stderr: string[] = []
  const signatures: string[] = []
  const bodies: string[] = []
  const waits: number[] = []
  const code = await runPay(
    ['--url', 'http://service.test', 'hash', '{"input":"abc"}'],
    { PAYER_PRIVATE_KEY: PAYER },
    { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) },
    async (input, init) => {
      const request = new Request(input, init)
      const signature = request.headers.get('PAYMENT-SIGNATURE')
      if (signature === null) {
        return Response.json(
          { ok: false, code: 'payment_required', error: 'Payment required' },
          { status: 402, headers: { 'PAYMENT-REQUIRED': encodePaymentRequiredHeader(REQUIRED) } },
        )
      }
      signatures.push(signature)
      bodies.push(await request.text())
      const next = paid[Math.min(signatures.length, paid.length) - 1] as () => Response
      return next()
    },
    {
      ...retry,
      sleep: async (ms) => {
        waits.push(ms)
      },
    },
  )
  return { code, stdout: stdout.join(''), stderr: stderr.join(''), signatures, bodies, waits }
}

describe('runPay on 503 settlement_unknown', () => {
  const ok = () => Response.json({ ok: true, result: { hex: 'ba78' } })

  it('resends the same payment after Retry-After until it gets the result', async () => {
    const run = await scripted([() => unknown('2'), () => unknown('1'), ok])
    expect(run.code).toBe(0)
    expect(JSON.parse(run.stdout)).toEqual({ ok: true, result: { hex: 'ba78' } })
    // One signature, sent three times with the same body; the waits are the Retry-After's.
    expect(run.signatures).toHaveLength(3)
    expect(new Set(run.signatures).size).toBe(1)
    expect(decodePaymentSignatureHeader(run.signatures[0] as string).accepted.amount).toBe('1000')
    expect(run.bodies).toEqual(Array(3).fill('{"input":"abc"}'))
    expect(run.waits).toEqual([2000, 1000])
    expect(run.stderr).toContain(
      'resending the same payment (no new signature) in 2 s, retry 1 of 3',
    )
    expect(run.stderr).toContain('retry 2 of 3')
    expect(run.stderr).toMatch(
      /HTTP 200 in \d+ ms \(402 -> sign -> paid request -> 2 resends of the same payment\)/,
    )
    // No payment contents on stderr.
    expect(run.stderr).not.toContain(run.signatures[0])
  })

  it('gives up after three resends, bounds the waits, and says what is safe', async () => {
    const run = await scripted([() => unknown(), () => unknown('3600'), () => unknown('4')])
    expect(run.code).toBe(1)
    expect(run.signatures).toHaveLength(4)
    expect(new Set(run.signatures).size).toBe(1)
    // No Retry-After: 5 s; one hour: the 30 s bound.
    expect(run.waits).toEqual([5000, 30_000, 4000])
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, code: 'settlement_unknown' })
    expect(run.stderr).toContain(
      'pay: giving up after 3 resends of the same payment: its settlement is still unknown, so ' +
        'the payment may have moved. Retrying the same payment later is safe',
    )
    expect(run.stderr).toContain('running this command again signs a NEW payment')
  })

  it('stops resending at the first answer that is not a retry signal', async () => {
    const refused = () =>
      Response.json(
        { ok: false, code: 'settlement_failed', error: 'Settlement failed: nonce used' },
        { status: 402 },
      )
    const run = await scripted([() => unknown('0'), refused])
    expect(run.code).toBe(1)
    expect(run.signatures).toHaveLength(2)
    expect(new Set(run.signatures).size).toBe(1)
    expect(run.waits).toEqual([0])
    expect(JSON.parse(run.stdout)).toMatchObject({ code: 'settlement_failed' })
    expect(run.stderr).not.toContain('giving up')
    expect(run.stderr).toContain(
      'pay: the service refused the resent payment (settlement_failed) after the outcome of its ' +
        'first settlement was unknown: the payment may have moved;',
    )
  })

  it('takes its bounds from the options', async () => {
    const run = await scripted([() => unknown('9')], { attempts: 1, maxWaitSeconds: 2 })
    expect(run.signatures).toHaveLength(2)
    expect(run.waits).toEqual([2000])
    expect(run.stderr).toContain('giving up after 1 resend of the same payment')
  })
})

/** `runPay` with a fetch that must never be called: help sends nothing. */
async function helped(argv: string[]) {
  const stdout: string[] = []
  const stderr: string[] = []
  const code = await runPay(
    argv,
    {},
    { stdout: (t) => stdout.push(t), stderr: (t) => stderr.push(t) },
    async () => {
      throw new Error('help must send nothing')
    },
  )
  return { code, stdout: stdout.join(''), stderr: stderr.join('') }
}

describe('runPay --help', () => {
  it.each([[['--help']], [['-h']], [['help']]])(
    '%j prints the usage on stdout, exit 0',
    async (argv) => {
      expect(await helped(argv)).toEqual({ code: 0, stdout: `${PAY_USAGE}\n`, stderr: '' })
    },
  )

  it.each([[['hmac', '--help']], [['--help', 'hmac']], [['help', 'hmac']], [['/hmac', '-h']]])(
    '%j prints the tool help, from the catalogue',
    async (argv) => {
      expect(await helped(argv)).toEqual({ code: 0, stdout: `${toolHelp(hmacTool)}\n`, stderr: '' })
    },
  )

  it('an unknown tool with --help is still a usage error', async () => {
    const { code, stderr } = await helped(['nope', '--help'])
    expect(code).toBe(2)
    expect(stderr.startsWith('pay: unknown tool "nope"')).toBe(true)
  })

  it('drops parseArgs\' advice about "--", which does not fit behind npm\'s own', async () => {
    const { stderr } = await helped(['--nope', 'hash'])
    expect(stderr.split('\n')[0]).toBe("pay: Unknown option '--nope'")
  })

  it('says, for each tool, its price in USDC, every field with required or default, and a runnable example', () => {
    expect(toolHelp(hmacTool).split('\n')).toEqual([
      `hmac: HMAC. ${hmacTool.description}`,
      'price: 0.001 USDC per call (POST /hmac; MCP tool payload_hmac)',
      'fields of the JSON body (no others are accepted):',
      '  input (string; optional, default ""): UTF-8 message.',
      '  secret (string; required): HMAC key as UTF-8 text; used for this call only, never stored or echoed.',
      '  algorithm (one of "SHA-256", "SHA-384", "SHA-512"; optional, default "SHA-256"): SHA-2 algorithm (RFC 2104 with FIPS 180-4).',
      '  expected_hex (string; optional): Digest to verify against, in hex of either case; compared in constant time.',
      'limits:',
      ...hmacTool.limits.map((l) => `  ${l}`),
      'example:',
      `  npm run pay -- hmac '${JSON.stringify(hmacTool.examples[0])}'`,
    ])
    for (const tool of catalog) {
      const help = toolHelp(tool)
      const example = help.split('\n').at(-1) as string
      const body = /^ {2}npm run pay -- \S+ '(.*)'$/.exec(example)?.[1] ?? ''
      expect(tool.input.safeParse(JSON.parse(body.replaceAll("'\\''", "'"))).success).toBe(true)
      expect(help).toContain(`price: ${Number(tool.price) / 1e6} USDC per call`)
    }
  })
})
