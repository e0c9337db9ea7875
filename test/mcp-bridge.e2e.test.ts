import { generateKeyPairSync } from 'node:crypto'
import { readFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js'
import { getBase58Decoder } from '@solana/kit'
import { decodeJwt, SignJWT } from 'jose'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { freePort } from '../src/devnet/ports.js'
import type { DevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { catalog, findToolByMcpName } from '../src/tools/catalog.js'
import type { ToolDefinition, ToolEnv } from '../src/tools/types.js'
import {
  type BridgeSession,
  type CliRun,
  type FacilitatorProxy,
  type InstalledBridge,
  installBridge,
  runBridgeCli,
  type ServiceProxy,
  settleRedirectingProxy,
  spawnBridge,
  tamperingProxy,
} from './helpers/bridge.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, payToBalance } from './helpers/rails.js'
import {
  type DevService,
  type RunningService,
  startDevService,
  startService,
} from './helpers/service.js'

// End-to-end over real parts: the bridge packed with `npm pack`, installed from the tarball into an
// empty directory, and its installed bin spawned as an MCP server by the official MCP Client
// (StdioClientTransport) or run as a command line, against the service on the devnet (anvil,
// litesvm, the official @x402/core facilitator).
//
// "Nothing signed" is observed three ways: the bridge's stderr line "signed payment for <tool> on
// <network>" (written right after the x402 client signs), the service's payment events (a signed
// payment that reached the service is verified first), and the payer's on-chain balance.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let bridge: InstalledBridge
let dev: DevService
let stack: DevStack
let svc: RunningService
let events: PaymentEvent[]
let serviceTools: Tool[]
const sessions: BridgeSession[] = []
/** Every key handed to a bridge, to prove none of them ever reaches its stderr or stdout. */
const secrets: string[] = []
/** Everything the command-line runs printed (the sessions' stderr is in `sessions`). */
const printed: string[] = []

beforeAll(async () => {
  ;[bridge, dev] = await Promise.all([installBridge(), startDevService({ payers: 4, clock })])
  ;({ stack, svc, events } = dev)
  const direct = new Client({ name: 'bridge-e2e-direct', version: '1.0.0' })
  await direct.connect(new StreamableHTTPClientTransport(new URL(`${svc.baseUrl}/mcp`)))
  serviceTools = (await direct.listTools()).tools
  await direct.close()
}, 180_000)
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.close()))
  await dev?.stop()
  await bridge?.remove()
})

const evmKey = (payer: number) => {
  const key = stack.evm.payers[payer]?.privateKey as string
  secrets.push(key.slice(2))
  return key
}
const solanaKey = (payer: number) => {
  const key = getBase58Decoder().decode(stack.solana.payers[payer]?.secretKey as Uint8Array)
  secrets.push(key)
  return key
}
const evmPayer = (payer: number) => stack.evm.payers[payer]?.address as `0x${string}`
const solanaPayer = (payer: number) => stack.solana.payers[payer]?.address as string
const home = (name: string) => join(bridge.scratch, name)

async function session(name: string, env: Record<string, string>): Promise<BridgeSession> {
  const s = await spawnBridge(bridge.bin, home(name), { PAYLOAD_TOOLS_URL: svc.baseUrl, ...env })
  sessions.push(s)
  return s
}

const call = (s: BridgeSession, name: string, args: unknown) =>
  s.client.callTool({ name, arguments: args as Record<string, unknown> }) as Promise<CallToolResult>
const signedLines = (s: BridgeSession) => s.stderr.filter((l) => l.includes('signed payment for'))
const failureCode = (r: CallToolResult) =>
  (r._meta?.['payload-tools/failure'] as { code?: string } | undefined)?.code

/** The result the HTTP endpoint of `tool` returns for `body`, paid by payer 2 on `rail`. */
async function httpResult(tool: ToolDefinition, body: unknown, rail: 'evm' | 'solana') {
  const pay = await paidFetch(payerKeys(stack, rail, 2), rail)
  const res = await pay(`${svc.baseUrl}${tool.path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  })
  expect(res.status).toBe(200)
  return (await json(res)).result
}

describe('the installed bridge over stdio', () => {
  let base: BridgeSession
  let solana: BridgeSession

  beforeAll(async () => {
    ;[base, solana] = await Promise.all([
      session('base', { PAYER_PRIVATE_KEY: evmKey(0) }),
      session('solana', {
        PAYER_PRIVATE_KEY: evmKey(0),
        PAYER_SOLANA_SECRET_KEY: solanaKey(0),
        PAYER_RAIL: 'solana',
        SOLANA_RPC_URL: stack.solana.rpcUrl,
      }),
    ])
  })

  it('lists the 8 tools with the service schemas and prices, plus the spend and refund tools', async () => {
    const { tools } = await base.client.listTools()
    expect(tools.map((t) => t.name)).toEqual([
      ...catalog.map((t) => t.mcpName),
      'payload_tools_spend',
      // A Base wallet may pay by prepaid channel (MAX_USDC_DEPOSIT above 0): its refund tool.
      'payload_tools_refund',
    ])
    for (const remote of serviceTools) {
      const mirrored = tools.find((t) => t.name === remote.name) as Tool
      expect(mirrored.inputSchema).toEqual(remote.inputSchema)
      expect(mirrored.outputSchema).toEqual(remote.outputSchema)
      expect(mirrored._meta).toEqual(remote._meta)
      const price = remote._meta?.['x402/price'] as { display: string } | undefined
      expect(mirrored.description?.startsWith(remote.description as string)).toBe(true)
      expect(mirrored.description).toContain(`Price: ${price?.display} per call`)
    }
    expect(events).toEqual([])
  })

  it('pays payload_hash on Base: the HTTP result, payTo +0.001 USDC exactly, the transaction', async () => {
    const hash = findToolByMcpName('payload_hash') as ToolDefinition
    const args = { input: 'bridged', algorithm: 'SHA-512' }
    const expected = await httpResult(hash, args, 'evm')
    const payToBefore = await payToBalance(stack, 'evm')
    const payerBefore = await stack.evm.usdcBalance(evmPayer(0))

    const result = await call(base, 'payload_hash', args)
    expect(result.isError).toBeUndefined()
    expect(result.structuredContent).toEqual({ ok: true, result: expected })
    const settlement = result._meta?.['payload-tools/settlement'] as Record<string, string>
    expect(settlement).toEqual({
      network: 'eip155:8453',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      amount: '1000',
      display: '0.001 USDC',
    })
    // Released only once its delivery receipt verified against the service's JWKS.
    expect(result._meta?.['x402/payment-response']).toMatchObject({
      success: true,
      transaction: settlement.transaction,
      extensions: { 'delivery-receipt': { info: { receipt: expect.any(String) } } },
    })
    expect(result.content).toEqual([
      { type: 'text', text: JSON.stringify({ ok: true, result: expected }) },
      {
        type: 'text',
        text: `Paid 0.001 USDC on Base (eip155:8453), transaction ${settlement.transaction}.`,
      },
    ])
    expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
    expect(payerBefore - (await stack.evm.usdcBalance(evmPayer(0)))).toBe(1000n)
    expect(signedLines(base)).toEqual([
      'payload-tools-mcp: signed payment for payload_hash on eip155:8453 (0.001 USDC)',
    ])
  })

  it('pays payload_pipeline on Solana (PAYER_RAIL=solana): the HTTP result, payTo +0.003 USDC', async () => {
    const pipeline = findToolByMcpName('payload_pipeline') as ToolDefinition
    const args = pipeline.examples[0]
    const expected = await httpResult(pipeline, args, 'solana')
    const payToBefore = await payToBalance(stack, 'solana')
    const payerBefore = await stack.solana.usdcBalance(solanaPayer(0) as never)
    const evmBefore = await stack.evm.usdcBalance(evmPayer(0))

    const result = await call(solana, 'payload_pipeline', args)
    expect(result.structuredContent).toEqual({ ok: true, result: expected })
    expect(result._meta?.['payload-tools/settlement']).toMatchObject({
      network: stack.solana.network,
      amount: '3000',
    })
    expect((await payToBalance(stack, 'solana')) - payToBefore).toBe(3000n)
    expect(payerBefore - (await stack.solana.usdcBalance(solanaPayer(0) as never))).toBe(3000n)
    expect(await stack.evm.usdcBalance(evmPayer(0))).toBe(evmBefore)

    const spend = await call(solana, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({
      session: { total: '0.003', calls: 1 },
      rails: [
        { rail: 'base', session: '0' },
        { rail: 'solana', network: stack.solana.network, session: '0.003' },
      ],
      caps: { per_call: '0.01', per_session: '0.1', per_day: null },
    })
  })

  it('returns the service facilitator_unavailable as isError when the facilitator is down, and charges nothing', async () => {
    const payToBefore = await payToBalance(stack, 'evm')
    const payerBefore = await stack.evm.usdcBalance(evmPayer(0))
    events.length = 0
    await stack.stopFacilitator()
    let result: CallToolResult
    try {
      result = await call(base, 'payload_hash', { input: 'down' })
    } finally {
      await stack.startFacilitator()
    }
    expect(result.isError).toBe(true)
    expect(result.structuredContent).toEqual({
      ok: false,
      error: 'Payment facilitator is unavailable; nothing was run or charged',
      code: 'facilitator_unavailable',
      request_id: expect.any(String),
    })
    expect(result.content?.at(-1)).toEqual({
      type: 'text',
      text:
        'The service refused the paid call (facilitator_unavailable) and reports nothing ' +
        'charged; it does not count against the spend caps.',
    })
    expect(events).toEqual([])
    expect(await payToBalance(stack, 'evm')).toBe(payToBefore)
    expect(await stack.evm.usdcBalance(evmPayer(0))).toBe(payerBefore)
    const spend = await call(base, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({ session: { total: '0.001', calls: 1 } })
  })

  it('resends the same payment when the facilitator loses the settle answer, and charges one price', async () => {
    const facilitator = stack.facilitators[0] as (typeof stack.facilitators)[number]
    const from = facilitator.received.length
    const payToBefore = await payToBalance(stack, 'evm')
    const payerBefore = await stack.evm.usdcBalance(evmPayer(0))
    const lines = base.stderr.length
    facilitator.faults.loseNextSettleAnswers = 1
    let result: CallToolResult
    try {
      result = await call(base, 'payload_hash', { input: 'lost settle answer' })
    } finally {
      facilitator.faults.loseNextSettleAnswers = 0
    }
    const printed = base.stderr.slice(lines)
    // Signed once; the service's settlement_unknown (Retry-After 5 s) made it resend that payment.
    expect(printed.filter((l) => l.includes('signed payment for'))).toHaveLength(1)
    const resends = printed.filter((l) => l.includes('resending the same payment'))
    expect(resends[0]).toBe(
      'payload-tools-mcp: paid call of payload_hash: settlement_unknown; resending the same ' +
        'payment in 5 s (retry 1 of 3)',
    )
    expect(resends.length).toBeLessThanOrEqual(3)
    const settles = facilitator.received.slice(from).filter((r) => r.op === 'settle')
    expect(settles[0]).toMatchObject({ answer: 'lost', status: 200 })
    expect(settles.length).toBeGreaterThanOrEqual(2)
    expect(settles.length).toBeLessThanOrEqual(1 + resends.length)
    expect(new Set(settles.map((r) => r.payloadSha256)).size).toBe(1)
    // One price moved, once, and it counts against the caps whatever the final answer.
    expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
    expect(payerBefore - (await stack.evm.usdcBalance(evmPayer(0)))).toBe(1000n)
    const spend = await call(base, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({ session: { total: '0.002', calls: 2 } })
    if (result.isError) expect(JSON.stringify(result.content)).toContain('may have moved')
  }, 90_000)

  it('keeps stdout to JSON-RPC only', () => {
    expect(base.transportErrors).toEqual([])
    expect(solana.transportErrors).toEqual([])
  })
})

describe('the delivery receipt, checked by the bridge', () => {
  /** The paid answer's receipt and result, inside a JSON-RPC answer (undefined for others). */
  function paidParts(answer: Record<string, unknown>) {
    const result = answer.result as CallToolResult | undefined
    const settlement = result?._meta?.['x402/payment-response'] as
      | { extensions?: { 'delivery-receipt'?: { info: { receipt: string } } } }
      | undefined
    const info = settlement?.extensions?.['delivery-receipt']?.info
    const structured = result?.structuredContent as { result?: Record<string, unknown> } | undefined
    return info && structured?.result ? { info, result: structured.result } : undefined
  }
  const claimsOf = (receipt: string) => decodeJwt(receipt)
  const forgedPayload = (receipt: string, claims: Record<string, unknown>) => {
    const [header, , signature] = receipt.split('.')
    return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`
  }
  const tampers: Record<string, (answer: Record<string, unknown>) => Promise<void>> = {
    // One byte of the result: its last hex digit.
    result: async (answer) => {
      const parts = paidParts(answer)
      if (!parts) return
      const hex = parts.result.hex as string
      parts.result.hex = `${hex.slice(0, -1)}${hex.endsWith('0') ? '1' : '0'}`
    },
    claim: async (answer) => {
      const parts = paidParts(answer)
      if (!parts) return
      parts.info.receipt = forgedPayload(parts.info.receipt, {
        ...claimsOf(parts.info.receipt),
        amount: '1',
      })
    },
    key: async (answer) => {
      const parts = paidParts(answer)
      if (!parts) return
      const foreign = generateKeyPairSync('ed25519').privateKey
      parts.info.receipt = await new SignJWT(claimsOf(parts.info.receipt))
        .setProtectedHeader({ alg: 'EdDSA', kid: 'foreign', typ: 'delivery-receipt+jwt' })
        .sign(foreign)
    },
  }
  const proxies: ServiceProxy[] = []
  afterAll(async () => {
    await Promise.all(proxies.map((p) => p.stop()))
  })

  it.each([
    ['result', 'receipt_mismatch', { mismatched: ['result_sha256'] }],
    ['claim', 'receipt_invalid', { reason: 'bad_signature' }],
    ['key', 'receipt_invalid', { reason: 'unknown_key' }],
  ] as const)(
    'withholds the result when the answer was altered (%s): %s, and the payment counts',
    async (mode, code, details) => {
      const proxy = await tamperingProxy(svc.baseUrl, tampers[mode] as never)
      proxies.push(proxy)
      const s = await session(`tamper-${mode}`, {
        PAYLOAD_TOOLS_URL: proxy.url,
        PAYER_PRIVATE_KEY: evmKey(3),
      })
      const payToBefore = await payToBalance(stack, 'evm')
      const result = await call(s, 'payload_hash', { input: `tampered ${mode}` })
      expect(result.isError).toBe(true)
      expect(failureCode(result)).toBe(code)
      expect(result.structuredContent).toMatchObject({
        ok: false,
        code,
        network: 'eip155:8453',
        transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
        ...details,
      })
      expect(JSON.stringify(result)).not.toContain('"hex"')
      // Settled: the payment moved and counts against the caps.
      expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
      const spend = await call(s, 'payload_tools_spend', {})
      expect(spend.structuredContent).toMatchObject({ session: { total: '0.001', calls: 1 } })
      expect(s.stderr.some((l) => l.includes(`withheld (${code})`))).toBe(true)
    },
  )
})

describe('spend caps', () => {
  it('refuses the third call under a 0.002 USDC session cap, signing nothing', async () => {
    const capped = await session('capped', {
      PAYER_PRIVATE_KEY: evmKey(1),
      MAX_USDC_PER_SESSION: '0.002',
      MAX_USDC_PER_DAY: '0.05',
    })
    for (const input of ['one', 'two']) {
      expect((await call(capped, 'payload_hash', { input })).isError).toBeUndefined()
    }
    const payerBefore = await stack.evm.usdcBalance(evmPayer(1))
    const payToBefore = await payToBalance(stack, 'evm')
    events.length = 0

    const third = await call(capped, 'payload_hash', { input: 'three' })
    expect(third.isError).toBe(true)
    expect(failureCode(third)).toBe('spend_cap_exceeded')
    expect(third.structuredContent).toMatchObject({
      cap: 'MAX_USDC_PER_SESSION',
      amount: '1000',
      error:
        'MAX_USDC_PER_SESSION (0.002 USDC) refuses this call of 0.001 USDC; 0.002 USDC already ' +
        'spent this session. Nothing was signed.',
    })
    expect(signedLines(capped)).toHaveLength(2)
    expect(events).toEqual([])
    expect(await stack.evm.usdcBalance(evmPayer(1))).toBe(payerBefore)
    expect(await payToBalance(stack, 'evm')).toBe(payToBefore)

    const spend = await call(capped, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({
      session: { total: '0.002', calls: 2 },
      today: { total: '0.002' },
      caps: { per_session: '0.002', per_day: '0.05' },
      remaining: { session: '0', today: '0.048' },
    })
    const dayFile = join(home('capped'), '.config', 'payload-tools-mcp', 'spend-day.json')
    expect(JSON.parse(await readFile(dayFile, 'utf8'))).toEqual({
      version: 1,
      day: new Date().toISOString().slice(0, 10),
      spent: { 'eip155:8453': '2000' },
    })
  })
})

// Independent runs (no two touch the same payer), so they run at once: most of each is node
// loading the bridge's dependencies.
describe.concurrent('the installed bridge as a command line', () => {
  let other: RunningService
  let proxy: FacilitatorProxy

  beforeAll(async () => {
    // A second service on the same chains, offering Base only, whose facilitator refuses to settle.
    proxy = await settleRedirectingProxy(
      stack.facilitatorUrl,
      stack.evm.payers[2]?.address as string,
    )
    other = await startService(stack, { FACILITATOR_URL: proxy.url, PAY_TO_SOLANA: '' })
  })
  afterAll(async () => {
    await other?.stop()
    await proxy?.stop()
  })

  /** Runs the installed bin as a command line against `svc` (or `env.PAYLOAD_TOOLS_URL`). */
  async function cli(name: string, env: Record<string, string>, args: string[]): Promise<CliRun> {
    const run = await runBridgeCli(
      bridge.bin,
      home(name),
      { PAYLOAD_TOOLS_URL: svc.baseUrl, ...env },
      args,
    )
    printed.push(run.stdout, run.stderr)
    return run
  }

  it('call hash pays once and prints the result and the transaction', async () => {
    const payToBefore = await payToBalance(stack, 'evm')
    const run = await cli('cli', { PAYER_PRIVATE_KEY: evmKey(2) }, [
      'call',
      'hash',
      '{"input":"abc"}',
    ])
    expect(run.code).toBe(0)
    const [jsonText, paidLine] = run.stdout.split(/\n(?=Paid )/)
    expect(JSON.parse(jsonText as string)).toMatchObject({
      ok: true,
      result: { hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' },
    })
    expect(paidLine).toMatch(
      /^Paid 0\.001 USDC on Base \(eip155:8453\), transaction 0x[0-9a-f]{64}\.\n$/,
    )
    expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
  })

  it('reports a settlement failure, and the payer balance is unchanged', async () => {
    const payerBefore = await stack.evm.usdcBalance(evmPayer(3))
    const run = await cli(
      'settle',
      { PAYLOAD_TOOLS_URL: other.baseUrl, PAYER_PRIVATE_KEY: evmKey(3) },
      ['call', 'hash', '{"input":"abc"}'],
    )
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(
      'The service refused the paid call (settlement_failed) and reports nothing charged',
    )
    expect(run.stderr).toContain('signed payment for payload_hash on eip155:8453')
    expect(JSON.parse(run.stdout)).toMatchObject({ x402Version: 2, error: expect.any(String) })
    expect(await stack.evm.usdcBalance(evmPayer(3))).toBe(payerBefore)
  })

  it('refuses a 402 offering no rail the wallet can pay, signing nothing', async () => {
    const run = await cli(
      'norail',
      {
        PAYLOAD_TOOLS_URL: other.baseUrl,
        PAYER_SOLANA_SECRET_KEY: solanaKey(3),
        SOLANA_RPC_URL: stack.solana.rpcUrl,
      },
      ['call', 'payload_hash', '{}'],
    )
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(
      'The service offers Base (eip155:8453); this wallet pays USDC with scheme exact on Solana ' +
        'only. To pay on Base, set PAYER_PRIVATE_KEY. Nothing was signed.',
    )
    expect(run.stderr).not.toContain('signed payment')
    expect(JSON.parse(run.stdout)).toMatchObject({ ok: false, code: 'no_payable_rail' })
  })

  it('reports an unreachable service, signing nothing', async () => {
    const closed = `http://127.0.0.1:${await freePort()}`
    const run = await cli(
      'unreachable',
      { PAYLOAD_TOOLS_URL: closed, PAYER_PRIVATE_KEY: evmKey(3) },
      ['call', 'hash', '{}'],
    )
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(
      /The Payload Tools service is unreachable \(.+\)\. Check PAYLOAD_TOOLS_URL/,
    )
    expect(run.stderr).not.toContain('signed payment')
  })

  it('refuses to start without PAYLOAD_TOOLS_URL, saying how to set it', async () => {
    const run = await cli('nourl', { PAYLOAD_TOOLS_URL: '', PAYER_PRIVATE_KEY: evmKey(3) }, [])
    expect(run.code).toBe(1)
    expect(run.stderr).toMatch(
      /^payload-tools-mcp: PAYLOAD_TOOLS_URL: not set\. Set it to the base URL/,
    )
    expect(run.stdout).toBe('')
  })
})

describe('the documented tarball form', () => {
  it('runs as an MCP server through `npx -y file:<tarball>` and lists the tools', async () => {
    // As the README's snippet starts it. npx installs the tarball into the npm cache (from the
    // cache where it can): the user's cache, not the bridge's private HOME.
    const npmCache = process.env.npm_config_cache ?? join(homedir(), '.npm')
    const s = await spawnBridge(
      'npx',
      home('npx'),
      {
        PAYLOAD_TOOLS_URL: svc.baseUrl,
        PAYER_PRIVATE_KEY: evmKey(1),
        npm_config_cache: npmCache,
        npm_config_prefer_offline: 'true',
      },
      { args: ['-y', `file:${bridge.tarball}`], connectTimeoutMs: 170_000 },
    )
    sessions.push(s)
    const { tools } = await s.client.listTools()
    expect(tools.map((t) => t.name)).toEqual([
      ...catalog.map((t) => t.mcpName),
      'payload_tools_spend',
      // A Base wallet may pay by prepaid channel (MAX_USDC_DEPOSIT above 0): its refund tool.
      'payload_tools_refund',
    ])
    expect(s.transportErrors).toEqual([])
  }, 180_000)
})

describe('key material', () => {
  it('never appears in anything a bridge printed', () => {
    const output = [...sessions.flatMap((s) => s.stderr), ...printed].join('\n')
    expect(secrets.length).toBeGreaterThan(0)
    expect(printed.length).toBeGreaterThan(0)
    for (const secret of secrets) expect(output).not.toContain(secret)
  })
})
