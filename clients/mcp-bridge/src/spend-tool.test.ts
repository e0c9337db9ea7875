import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DayFile } from './day-file.js'
import { SpendLedger } from './ledger.js'
import { spendResult, spendTool } from './spend-tool.js'
import { BASE, SOL } from './test-support/offers.js'

type Report = {
  session: { total: string }
  today: { total: string }
  rails: { rail: string | null; network: string; session: string; today: string }[]
}
/** Atomic units of a decimal USDC string, to add rows up exactly. */
const atomic = (usdc: string) => {
  const [whole = '0', fraction = ''] = usdc.split('.')
  return BigInt(whole) * 1_000_000n + BigInt(fraction.padEnd(6, '0'))
}
const sumOf = (rows: Report['rails'], key: 'session' | 'today') =>
  rows.reduce((a, r) => a + atomic(r[key]), 0n)

describe('spendResult', () => {
  it('reports session, today, per rail, the caps and what remains, in USDC', () => {
    const result = spendResult(
      {
        day: '2025-06-01',
        session: { [BASE]: 1000n, [SOL]: 3000n },
        calls: 2,
        today: { [BASE]: 9000n, [SOL]: 3000n },
        caps: { perCall: 10_000n, perSession: 100_000n, perDay: 10_000n },
      },
      ['base', 'solana'],
    )
    expect(result.structuredContent).toEqual({
      currency: 'USDC',
      day: '2025-06-01',
      session: { total: '0.004', calls: 2 },
      today: { total: '0.012' },
      rails: [
        { rail: 'base', network: BASE, session: '0.001', today: '0.009' },
        { rail: 'solana', network: SOL, session: '0.003', today: '0.003' },
      ],
      caps: { per_call: '0.01', per_session: '0.1', per_day: '0.01' },
      // Over the day cap (another process paid at the same instant): never negative.
      remaining: { session: '0.096', today: '0' },
    })
    expect(result.content).toEqual([
      {
        type: 'text',
        text:
          'Spent 0.004 USDC this session in 2 paid calls (Base 0.001, Solana 0.003); 0.012 USDC ' +
          'today (UTC 2025-06-01: Base 0.009, Solana 0.003). Caps: 0.01 USDC per call, 0.1 per ' +
          'session (0.096 left), 0.01 per day (0 left).',
      },
    ])
  })

  it('says when today covers this process only', () => {
    const result = spendResult(
      {
        day: '2025-06-01',
        session: {},
        calls: 0,
        today: {},
        todayProblem: 'cannot read /x/spend-day.json: EACCES',
        caps: { perCall: 10_000n, perSession: 100_000n },
      },
      ['base'],
    )
    expect(result.structuredContent).toMatchObject({
      today: {
        total: '0',
        note: 'this process only; the day file is unreadable: cannot read /x/spend-day.json: EACCES',
      },
      rails: [{ rail: 'base', session: '0', today: '0' }],
      remaining: { session: '0.1', today: null },
    })
  })

  it("lists another process's rail too, so the rows add up to today's total", () => {
    // A Solana-only bridge; another bridge process of the user paid 0.002 USDC on Base today.
    const report = spendResult(
      {
        day: '2025-06-01',
        session: { [SOL]: 1000n },
        calls: 1,
        today: { [BASE]: 2000n, [SOL]: 1000n },
        caps: { perCall: 10_000n, perSession: 100_000n },
      },
      ['solana'],
    )
    const structured = report.structuredContent as Report
    expect(structured).toMatchObject({
      session: { total: '0.001' },
      today: { total: '0.003' },
      rails: [
        { rail: 'base', network: BASE, session: '0', today: '0.002' },
        { rail: 'solana', network: SOL, session: '0.001', today: '0.001' },
      ],
    })
    expect(report.content?.[0]).toMatchObject({
      text: expect.stringContaining(
        'Spent 0.001 USDC this session in 1 paid call (Base 0, Solana 0.001); 0.003 USDC today ' +
          '(UTC 2025-06-01: Base 0.002, Solana 0.001).',
      ),
    })
  })

  it('lists a network that is neither rail (a hand-edited day file) with rail null', () => {
    const structured = spendResult(
      {
        day: '2025-06-01',
        session: {},
        calls: 0,
        today: { 'eip155:1': 5000n, [BASE]: 1000n },
        caps: { perCall: 10_000n, perSession: 100_000n },
      },
      ['base'],
    ).structuredContent as Report
    expect(structured.today.total).toBe('0.006')
    expect(structured.rails).toEqual([
      { rail: 'base', network: BASE, session: '0', today: '0.001' },
      { rail: null, network: 'eip155:1', session: '0', today: '0.005' },
    ])
  })

  it('adds up per rail to the totals with two bridge processes sharing the day file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'spend-two-'))
    try {
      const caps = { perCall: 10_000n, perSession: 100_000n }
      const baseBridge = new SpendLedger(caps, new DayFile(dir))
      const solanaBridge = new SpendLedger(caps, new DayFile(dir))
      baseBridge.commit(baseBridge.reserve(BASE, 1000n))
      baseBridge.commit(baseBridge.reserve(BASE, 1000n))
      solanaBridge.commit(solanaBridge.reserve(SOL, 1000n))
      const structured = spendResult(solanaBridge.snapshot(), ['solana'])
        .structuredContent as Report
      expect(structured.today.total).toBe('0.003')
      expect(structured.session.total).toBe('0.001')
      expect(sumOf(structured.rails, 'today')).toBe(atomic(structured.today.total))
      expect(sumOf(structured.rails, 'session')).toBe(atomic(structured.session.total))
      expect(structured.rails.map((r) => [r.rail, r.today])).toEqual([
        ['base', '0.002'],
        ['solana', '0.001'],
      ])
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('is listed as a free, read-only tool without arguments', () => {
    expect(spendTool.name).toBe('payload_tools_spend')
    expect(spendTool.inputSchema).toEqual({
      type: 'object',
      properties: {},
      additionalProperties: false,
    })
    expect(spendTool.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false })
    expect(spendTool._meta).toBeUndefined()
  })

  it('shows the prepaid channel: MAX_USDC_DEPOSIT, and the open one shortened, in USDC', () => {
    const snapshot = {
      day: '2025-06-01',
      session: { [BASE]: 13_000n },
      calls: 13,
      today: { [BASE]: 13_000n },
      caps: { perCall: 10_000n, perSession: 100_000n },
    }
    const id = `0x5a1c${'0'.repeat(56)}e93b`
    const open = { network: BASE, id, balance: 1_000_000n, charged: 13_000n }
    const report = spendResult(snapshot, ['base'], { cap: 1_000_000n, open })
    expect(report.structuredContent).toMatchObject({
      session: { total: '0.013', calls: 13 },
      channel: {
        scheme: 'batch-settlement',
        max_deposit: '1',
        open: {
          network: BASE,
          id: '0x5a1c…e93b',
          balance: '1',
          charged: '0.013',
          remaining: '0.987',
        },
      },
    })
    expect((report.content?.[0] as { text?: string } | undefined)?.text).toMatch(
      / Prepaid channel 0x5a1c…e93b on Base: 0\.013 of its 1 USDC deposit charged, 0\.987 left \(payload_tools_refund gets it back\)\.$/,
    )
    const none = spendResult(snapshot, ['base'], { cap: 500_000n, open: undefined })
    expect(none.structuredContent).toMatchObject({
      channel: { scheme: 'batch-settlement', max_deposit: '0.5', open: null },
    })
    // Without a channel wallet the report is as before.
    expect(spendResult(snapshot, ['base']).structuredContent).not.toHaveProperty('channel')
  })
})
