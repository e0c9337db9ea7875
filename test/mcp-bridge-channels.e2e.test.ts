import { join } from 'node:path'
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { hashTool } from '../src/tools/hash.js'
import {
  type BridgeSession,
  type InstalledBridge,
  installBridge,
  runBridgeCli,
  spawnBridge,
} from './helpers/bridge.js'
import { settleForPayTo } from './helpers/escrow.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'

// The installed bridge (npm pack, installed from the tarball) paying by voucher: the official
// MCP client over stdio, the service on the devnet with our escrow offering batch-settlement
// beside exact. One deposit of the service's minDeposit, then vouchers without the facilitator;
// the spend caps count prices, never the deposit; payload_tools_spend shows the open channel;
// the manager claims every voucher at once; the refund (tool or command) returns the rest.

const PRICE = BigInt(hashTool.price)
const DEPOSIT = 1_000_000n
const CALLS = 20
let bridge: InstalledBridge
let stack: DevStack
let svc: RunningService
const sessions: BridgeSession[] = []

beforeAll(async () => {
  stack = await sharedDevStack()
  ;[bridge, svc] = await Promise.all([
    installBridge(),
    startService(stack, {
      EVM_RPC_URL: stack.evm.rpcUrl,
      BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
      BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
    }),
  ])
}, 240_000)
afterAll(async () => {
  await Promise.all(sessions.map((s) => s.close()))
  await svc?.stop()
  await bridge?.remove()
  // A refund claims what it charged for payTo without settling it: settled here, so that the
  // next file on this shared stack reads payTo's exact balance.
  if (stack) await settleForPayTo(stack)
})

const env = (payer: number, extra: Record<string, string> = {}) => ({
  PAYLOAD_TOOLS_URL: svc.baseUrl,
  PAYER_PRIVATE_KEY: stack.evm.payers[payer]?.privateKey as string,
  BASE_RPC_URL: stack.evm.rpcUrl,
  ...extra,
})
const home = (name: string) => join(bridge.scratch, name)
async function session(name: string, payer: number, extra: Record<string, string> = {}) {
  const s = await spawnBridge(bridge.bin, home(name), env(payer, extra))
  sessions.push(s)
  return s
}
const call = (s: BridgeSession, name: string, args: Record<string, unknown>) =>
  s.client.callTool({ name, arguments: args }) as Promise<CallToolResult>
const address = (payer: number) => stack.evm.payers[payer]?.address as `0x${string}`
const settlementOf = (r: CallToolResult) =>
  r._meta?.['payload-tools/settlement'] as Record<string, unknown>

describe('the installed bridge with a service that offers prepaid channels', () => {
  let base: BridgeSession
  let charged = 0n

  beforeAll(async () => {
    base = await session('channel', 1)
  })

  it(`pays ${CALLS} calls with one deposit and vouchers, none of them asking the facilitator`, async () => {
    const before = {
      payer: await stack.evm.usdcBalance(address(1)),
      payTo: await stack.evm.usdcBalance(stack.evm.payTo),
    }
    let quiet = 0
    for (let i = 1; i <= CALLS; i++) {
      const asked = { ...stack.facilitatorRequests }
      const input = `bridge voucher ${i}`
      const result = await call(base, 'payload_hash', { input })
      expect(result.isError).toBeUndefined()
      expect(result.structuredContent).toEqual({
        ok: true,
        result: hashTool.run(hashTool.input.parse({ input }), { nowSeconds: () => 0 }),
      })
      charged += PRICE
      const settlement = settlementOf(result)
      expect(settlement).toMatchObject({
        network: 'eip155:8453',
        scheme: 'batch-settlement',
        amount: hashTool.price,
        channel: {
          id: expect.stringMatching(/^0x[0-9a-f]{64}$/),
          balance: '1',
          charged: (Number(charged) / 1e6).toString(),
        },
      })
      if (i === 1) {
        expect(settlement.deposit).toBe(DEPOSIT.toString())
        expect(settlement.transaction).toMatch(/^0x[0-9a-f]{64}$/)
      } else {
        expect(settlement.transaction).toBe('')
        expect((result.content?.at(-1) as { text?: string } | undefined)?.text).toMatch(
          /^Paid 0\.001 USDC on Base \(eip155:8453\) by voucher from prepaid channel 0x[0-9a-f]{4}…[0-9a-f]{4} \(/,
        )
      }
      const now = stack.facilitatorRequests
      if (now.verify === asked.verify && now.settle === asked.settle) quiet++
    }
    expect(quiet).toBe(CALLS - 1)
    expect(await stack.evm.usdcBalance(address(1))).toBe(before.payer - DEPOSIT)
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(before.payTo)
    // Never two at once, never a corrective round trip: one signature per call.
    expect(base.stderr.filter((l) => l.includes('signed payment for'))).toHaveLength(CALLS)
    expect(base.stderr.filter((l) => l.includes('signing again'))).toEqual([])
  }, 180_000)

  it('shows the open channel and the prices spent, not the deposit', async () => {
    const spend = await call(base, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({
      session: { total: '0.02', calls: CALLS },
      caps: { per_session: '0.1' },
      remaining: { session: '0.08' },
      channel: {
        scheme: 'batch-settlement',
        max_deposit: '1',
        open: {
          network: 'eip155:8453',
          id: expect.stringMatching(/^0x[0-9a-f]{4}…[0-9a-f]{4}$/),
          balance: '1',
          charged: '0.02',
          remaining: '0.98',
        },
      },
    })
  })

  it('claims every voucher in one claim, payTo credited exactly what was charged; the refund tool returns the rest', async () => {
    // Left by an earlier file's refund, if any: not this channel's.
    await settleForPayTo(stack)
    const payTo = await stack.evm.usdcBalance(stack.evm.payTo)
    const payer = await stack.evm.usdcBalance(address(1))
    expect(await svc.service.channels?.manager.claimAndSettle()).toEqual({
      claimed: 1,
      settled: true,
    })
    expect(await stack.evm.usdcBalance(stack.evm.payTo)).toBe(payTo + charged)
    const refund = await call(base, 'payload_tools_refund', {})
    expect(refund.isError).toBeUndefined()
    expect(refund.structuredContent).toMatchObject({
      ok: true,
      network: 'eip155:8453',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      refunded: '0.98',
    })
    expect(await stack.evm.usdcBalance(address(1))).toBe(payer + DEPOSIT - charged)
    const spend = await call(base, 'payload_tools_spend', {})
    expect(spend.structuredContent).toMatchObject({
      session: { total: '0.02' },
      channel: { open: null },
    })
    // Nothing left: a refusal, nothing moved.
    const again = await call(base, 'payload_tools_refund', {})
    expect(again.isError).toBe(true)
    expect(again.structuredContent).toMatchObject({ ok: false, code: 'refund_failed' })
    expect(await stack.evm.usdcBalance(address(1))).toBe(payer + DEPOSIT - charged)
  }, 120_000)

  it('lets a session cap below the deposit pay by voucher: the cap counts the prices', async () => {
    const capped = await session('capped', 2, { MAX_USDC_PER_SESSION: '0.003' })
    const before = await stack.evm.usdcBalance(address(2))
    for (const input of ['a', 'b', 'c']) {
      expect((await call(capped, 'payload_hash', { input })).isError).toBeUndefined()
    }
    const fourth = await call(capped, 'payload_hash', { input: 'd' })
    expect(fourth.structuredContent).toMatchObject({
      ok: false,
      code: 'spend_cap_exceeded',
      cap: 'MAX_USDC_PER_SESSION',
      spent: '3000',
    })
    expect(await stack.evm.usdcBalance(address(2))).toBe(before - DEPOSIT)
    // The command line refunds the same channel from the same state directory.
    const cli = await runBridgeCli(bridge.bin, home('capped'), env(2), ['refund'])
    expect(cli.code).toBe(0)
    expect(JSON.parse(cli.stdout.split('\nRefunded')[0] as string)).toMatchObject({
      ok: true,
      refunded: '0.997',
    })
    expect(await stack.evm.usdcBalance(address(2))).toBe(before - 3n * PRICE)
    expect(await settleForPayTo(stack)).toBe(3n * PRICE)
  }, 120_000)

  it('pays exact when MAX_USDC_DEPOSIT is below the minimum deposit the service asks', async () => {
    const small = await session('small', 3, { MAX_USDC_DEPOSIT: '0.5' })
    const before = await stack.evm.usdcBalance(address(3))
    const result = await call(small, 'payload_hash', { input: 'exact' })
    expect(result.isError).toBeUndefined()
    expect(settlementOf(result)).toEqual({
      network: 'eip155:8453',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      amount: hashTool.price,
      display: '0.001 USDC',
    })
    expect(await stack.evm.usdcBalance(address(3))).toBe(before - PRICE)
    expect(small.stderr).toContain(
      "payload-tools-mcp: payload_hash: paying with exact: a channel needs a deposit of 1 USDC (the service's minDeposit), above MAX_USDC_DEPOSIT (0.5 USDC)",
    )
  })
})
