import { describe, expect, it } from 'vitest'
import { catalog } from '../tools/catalog.js'
import { hmacTool } from '../tools/hmac.js'
import { PAY_USAGE, runPay, toolHelp } from './pay-command.js'

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

  it('lists the catalogue in its usage', () => {
    expect(PAY_USAGE).toContain(`tools: ${TOOLS.replaceAll(', ', ' ')}\n`)
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
