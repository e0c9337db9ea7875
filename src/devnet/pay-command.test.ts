import { describe, expect, it } from 'vitest'
import { PAY_USAGE, runPay } from './pay-command.js'

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
