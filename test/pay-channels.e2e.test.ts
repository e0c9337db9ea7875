import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { DevStack } from '../src/devnet/stack.js'
import { settleForPayTo, unsettledForPayTo } from './helpers/escrow.js'
import { type RunningService, sharedDevStack, startService } from './helpers/service.js'

// `npm run -s pay -- --scheme batch-settlement` as a user scripts it, against the service on the
// devnet with our escrow: the first call deposits the service's minDeposit, the next ones pay by
// voucher without a facilitator request, the channel record survives between runs (one process
// each) in PAYER_CHANNELS_DIR, a stale record is checked against the chain, and `--refund` brings
// back exactly what was not charged.

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PRICE = { hash: 1000n, pipeline: 3000n }
const DEPOSIT = 1_000_000n
let stack: DevStack
let svc: RunningService
let plain: RunningService
let channelsDir: string

beforeAll(async () => {
  stack = await sharedDevStack()
  ;[svc, plain] = await Promise.all([
    startService(stack, {
      EVM_RPC_URL: stack.evm.rpcUrl,
      // The manager claims when the test asks it to, not on its timers.
      BATCH_SETTLEMENT_CLAIM_INTERVAL_S: '3600',
      BATCH_SETTLEMENT_SETTLE_INTERVAL_S: '3600',
    }),
    // Without EVM_RPC_URL the service offers exact alone.
    startService(stack),
  ])
  channelsDir = mkdtempSync(join(tmpdir(), 'payer-channels-'))
}, 180_000)
afterAll(async () => {
  await svc?.stop()
  await plain?.stop()
  // The refunds claimed for payTo; settled here, so that the next file's balances start clean.
  if (stack) await settleForPayTo(stack)
})

interface PayRun {
  code: number
  stdout: string
  stderr: string
}

/** `npm run -s pay -- <args>` as payer 3 of the shared stack, against `service`. */
async function pay(args: string[], service = svc, env: Record<string, string> = {}) {
  try {
    const { stdout, stderr } = await run('npm', ['run', '-s', 'pay', '--', ...args], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        SERVICE_URL: service.baseUrl,
        PAYER_PRIVATE_KEY: stack.evm.payers[3]?.privateKey as string,
        EVM_RPC_URL: stack.evm.rpcUrl,
        PAYER_CHANNELS_DIR: channelsDir,
        ...env,
      },
      timeout: 120_000,
    })
    return { code: 0, stdout, stderr } as PayRun
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string }
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' } as PayRun
  }
}

const payer = () => stack.evm.payers[3]?.address as `0x${string}`
const balances = async () => ({
  payer: await stack.evm.usdcBalance(payer()),
  payTo: await stack.evm.usdcBalance(stack.evm.payTo),
})
const records = () => readdirSync(join(channelsDir, 'client')).filter((f) => f.endsWith('.json'))
const SHA_ABC = 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'

describe('npm run pay -- --scheme batch-settlement', () => {
  let channel: string
  let channelFile: string

  it('deposits the minimum once, then pays by voucher in later runs without the facilitator', async () => {
    const before = await balances()
    const first = await pay(['--scheme', 'batch-settlement', 'hash', '{"input":"abc"}'])
    expect(first.code).toBe(0)
    expect(JSON.parse(first.stdout)).toMatchObject({ ok: true, result: { hex: SHA_ABC } })
    const lines = first.stderr.trimEnd().split('\n')
    expect(lines).toHaveLength(3)
    expect(lines[0]).toMatch(/^HTTP 200 in \d+ ms \(402 -> sign -> paid request\)$/)
    const deposited =
      /^deposited 1 USDC into channel (0x[0-9a-f]{4}…[0-9a-f]{4}) on eip155:8453 \(transaction 0x[0-9a-f]{64}\), and paid this call from it: 0\.001 USDC charged of its 1 USDC deposit$/.exec(
        lines[1] ?? '',
      )
    expect(deposited, lines[1]).not.toBeNull()
    channel = deposited?.[1] as string
    channelFile = records()[0] as string
    expect(lines[2]).toMatch(/^receipt: signed by the service .*result digest matches$/)
    // The deposit went into the escrow: nothing reached payTo yet.
    expect(await balances()).toEqual({ payer: before.payer - DEPOSIT, payTo: before.payTo })
    expect(records()).toHaveLength(1)

    const asked = { ...stack.facilitatorRequests }
    const second = await pay([
      '--scheme',
      'batch-settlement',
      'pipeline',
      '{"input":"hi","operations":[{"type":"sha256"}]}',
    ])
    expect(second.code).toBe(0)
    expect(JSON.parse(second.stdout)).toMatchObject({ ok: true })
    expect(second.stderr.split('\n')[1]).toBe(
      `paid by voucher on eip155:8453: channel ${channel}, 0.004 USDC charged of its 1 USDC ` +
        'deposit (no transaction: the service claims vouchers in batches)',
    )
    const third = await pay(['--scheme', 'batch-settlement', 'hash', '{"input":"abc"}'])
    expect(third.code).toBe(0)
    expect(third.stderr).toContain(`channel ${channel}, 0.005 USDC charged of its 1 USDC deposit`)
    // Vouchers: no verify, no settle.
    expect(stack.facilitatorRequests).toMatchObject({ verify: asked.verify, settle: asked.settle })
    expect(await balances()).toEqual({ payer: before.payer - DEPOSIT, payTo: before.payTo })
    const record = JSON.parse(
      readFileSync(join(channelsDir, 'client', records()[0] as string), 'utf8'),
    ) as { chargedCumulativeAmount: string; balance: string }
    expect(record).toMatchObject({ chargedCumulativeAmount: '5000', balance: '1000000' })
  }, 180_000)

  it('rebuilds a record the service is ahead of (lost, another process paid) from the chain and the corrective 402', async () => {
    const [file] = records()
    const path = join(channelsDir, 'client', file as string)
    const kept = readFileSync(path, 'utf8')
    // What a record of a previous devnet would say: a deposit this chain never saw.
    writeFileSync(path, JSON.stringify({ chargedCumulativeAmount: '9000', balance: '5000000' }))
    const before = await balances()
    const result = await pay(['--scheme', 'batch-settlement', 'hash', '{"input":"abcd"}'])
    expect(result.code).toBe(0)
    expect(JSON.parse(result.stdout)).toMatchObject({ ok: true, result: { input_bytes: 4 } })
    // Rebuilt from the chain (nothing claimed yet: its first voucher is one the service took
    // before, for another input) and from the service's corrective 402: the next voucher, no
    // new deposit.
    expect(result.stderr.split('\n')[0]).toMatch(
      /^HTTP 200 in \d+ ms \(402 -> sign -> paid request -> 402 \(the channel resynced\) -> sign -> paid request\)$/,
    )
    expect(result.stderr).toContain(`channel ${channel}, 0.006 USDC charged of its 1 USDC deposit`)
    expect(await balances()).toEqual(before)
    expect(JSON.parse(readFileSync(path, 'utf8'))).toMatchObject({
      chargedCumulativeAmount: '6000',
      balance: '1000000',
    })
    expect(kept).toContain('"chargedCumulativeAmount": "5000"')
  }, 120_000)

  it('--refund brings back exactly what was not charged; the charged amount reaches payTo', async () => {
    await settleForPayTo(stack)
    const before = await balances()
    const result = await pay(['--refund'])
    expect(result.code).toBe(0)
    expect(result.stderr).toMatch(
      new RegExp(
        `^refunded of channel ${channel} on eip155:8453: transaction 0x[0-9a-f]{64}; what the service had not charged is back in the payer wallet\\n$`,
      ),
    )
    expect(JSON.parse(result.stdout)).toMatchObject({ success: true, network: 'eip155:8453' })
    const charged = 3n * PRICE.hash + PRICE.pipeline
    expect((await balances()).payer).toBe(before.payer + DEPOSIT - charged)
    // The full refund closed the record.
    expect(records()).toEqual([])
    // The refund claimed the charged amount in the escrow for payTo (the manager's settle timer
    // moves it to payTo's wallet; here the escrow's settle, at once).
    expect(await unsettledForPayTo(stack)).toBe(charged)
    expect(await settleForPayTo(stack)).toBe(charged)
    expect((await balances()).payTo).toBe(before.payTo + charged)

    // Nothing left to refund: said, not thrown.
    const again = await pay(['--refund', 'pipeline'])
    expect(again.code).toBe(1)
    expect(again.stderr).toMatch(/^pay: no refund: Refund failed/)
  }, 120_000)

  it('tops the channel up when the chain says it was refunded elsewhere (an idle refund)', async () => {
    // The record as it was before a refund this payer did not see (the service refunds channels
    // idle for BATCH_SETTLEMENT_IDLE_REFUND_S): a deposit the escrow no longer holds.
    writeFileSync(
      join(channelsDir, 'client', channelFile),
      JSON.stringify({ chargedCumulativeAmount: '6000', balance: '1000000' }),
    )
    const before = await balances()
    const result = await pay(['--scheme', 'batch-settlement', 'hash', '{"input":"top-up"}'])
    expect(result.code).toBe(0)
    expect(result.stderr.split('\n')[1]).toMatch(
      new RegExp(
        `^deposited 1 USDC into channel ${channel} on eip155:8453 \\(transaction 0x[0-9a-f]{64}\\), and paid this call from it: 0\\.007 USDC charged of its 1\\.006 USDC deposit$`,
      ),
    )
    expect(await balances()).toEqual({ payer: before.payer - DEPOSIT, payTo: before.payTo })
    // Left as it was found: nothing to refund for the next file's payer 3 but this deposit.
    expect((await pay(['--refund'])).code).toBe(0)
  }, 120_000)

  it('says so, signing nothing, when the service offers exact alone', async () => {
    const before = await balances()
    const result = await pay(['--scheme', 'batch-settlement', 'hash', '{"input":"abc"}'], plain)
    expect(result.code).toBe(1)
    expect(result.stdout).toBe('')
    expect(result.stderr).toBe(
      'pay: the service offers no batch-settlement (it offers exact on eip155:8453, exact on ' +
        `${stack.solana.network}), so nothing was signed or paid: pay with --scheme exact\n`,
    )
    expect(await balances()).toEqual(before)
  })
})
