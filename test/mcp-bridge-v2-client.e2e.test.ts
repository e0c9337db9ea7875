import { join } from 'node:path'
import { type CallToolResult, Client } from '@modelcontextprotocol/client'
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import type { PaymentEvent } from '../src/payment/gate.js'
import { catalog } from '../src/tools/catalog.js'
import type { ToolEnv } from '../src/tools/types.js'
import { type InstalledBridge, installBridge } from './helpers/bridge.js'
import { payToBalance } from './helpers/rails.js'
import { type DevService, type RunningService, startDevService } from './helpers/service.js'

// The v2 MCP client (@modelcontextprotocol/client 2.4.0) over stdio against the installed bridge
// (npm pack), itself on the v2 SDK, and the service on the devnet, as in mcp-bridge.e2e.test.ts:
// pinned to 2026-07-28 (server/discover, no initialize) it lists and pays; in automatic mode it
// gets 2026-07-28 too. The v1 client (2025-11-25) through the bridge: mcp-bridge.e2e.test.ts.

const clock: ToolEnv = { nowSeconds: () => 1_700_000_000 }
let bridge: InstalledBridge
let dev: DevService
let stack: DevStack
let svc: RunningService
let events: PaymentEvent[]
const clients: Client[] = []
const stderr: string[] = []

beforeAll(async () => {
  ;[bridge, dev] = await Promise.all([installBridge(), startDevService({ payers: 2, clock })])
  ;({ stack, svc, events } = dev)
}, 180_000)
afterAll(async () => {
  await Promise.all(clients.map((c) => c.close()))
  await dev?.stop()
  await bridge?.remove()
})

const MODERN = '2026-07-28'

/** The v2 client (pinned to 2026-07-28 unless `auto`), spawning the installed bridge with `env`. */
async function connect(
  name: string,
  env: Record<string, string>,
  mode: 'auto' | { pin: string } = { pin: MODERN },
): Promise<Client> {
  const home = join(bridge.scratch, name)
  const transport = new StdioClientTransport({
    command: bridge.bin,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: home,
      XDG_CONFIG_HOME: join(home, '.config'),
      PAYLOAD_TOOLS_URL: svc.baseUrl,
      ...env,
    },
    stderr: 'pipe',
  })
  transport.stderr?.on('data', (chunk: Buffer) =>
    stderr.push(...chunk.toString('utf8').split('\n')),
  )
  const client = new Client(
    { name: 'bridge-v2-client-e2e', version: '1.0.0' },
    { versionNegotiation: { mode } },
  )
  await client.connect(transport)
  clients.push(client)
  return client
}

const evmKey = (payer: number) => stack.evm.payers[payer]?.privateKey as string
const call = (client: Client, name: string, args: Record<string, unknown>) =>
  client.callTool({ name, arguments: args }) as Promise<CallToolResult>

describe('the v2 client pinned to 2026-07-28 through the installed bridge', () => {
  let base: Client

  beforeAll(async () => {
    base = await connect('base', { PAYER_PRIVATE_KEY: evmKey(0) })
  })

  it('speaks 2026-07-28 and lists the 8 tools plus the spend and refund tools', async () => {
    expect(base.getNegotiatedProtocolVersion()).toBe(MODERN)
    const { tools } = await base.listTools()
    expect(tools.map((t) => t.name)).toEqual([
      ...catalog.map((t) => t.mcpName),
      'payload_tools_spend',
      // A Base wallet may pay by prepaid channel (MAX_USDC_DEPOSIT above 0): its refund tool.
      'payload_tools_refund',
    ])
  })

  it('refuses, signing nothing, a call whose PaymentRequired asks more than MAX_USDC_PER_CALL', async () => {
    const capped = await connect('capped', {
      PAYER_PRIVATE_KEY: evmKey(1),
      MAX_USDC_PER_CALL: '0.0005',
    })
    const before = events.length
    const result = await call(capped, 'payload_hash', { input: 'unpaid' })
    expect(result.isError).toBe(true)
    // The amount is the service's PaymentRequired offer for the unpaid call (0.001 USDC).
    expect(result.structuredContent).toMatchObject({
      ok: false,
      code: 'spend_cap_exceeded',
      cap: 'MAX_USDC_PER_CALL',
      amount: '1000',
    })
    expect(events.length).toBe(before)
    expect(stderr.filter((l) => l.includes('signed payment for payload_hash'))).toEqual([])
  })

  it('pays payload_hash on Base: payTo +0.001 USDC, the transaction in the result', async () => {
    const payToBefore = await payToBalance(stack, 'evm')
    const result = await call(base, 'payload_hash', { input: 'bridged by a v2 client' })
    expect(result.isError).toBeFalsy()
    expect(result.structuredContent).toMatchObject({ ok: true })
    expect(result._meta?.['payload-tools/settlement']).toMatchObject({
      network: 'eip155:8453',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      amount: '1000',
    })
    expect((await payToBalance(stack, 'evm')) - payToBefore).toBe(1000n)
  })
})

describe('the v2 client in automatic mode through the installed bridge', () => {
  it('negotiates 2026-07-28, lists, and its spend tool reports nothing spent', async () => {
    const auto = await connect('auto', { PAYER_PRIVATE_KEY: evmKey(1) }, 'auto')
    expect(auto.getNegotiatedProtocolVersion()).toBe(MODERN)
    expect((await auto.listTools()).tools).toHaveLength(catalog.length + 2)
    const spend = await call(auto, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({ session: { calls: 0 } })
  })
})
