import { describe, expect, it } from 'vitest'
import { spendResult, spendTool } from './spend-tool.js'
import { BASE, SOL } from './test-support/offers.js'

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
          'today (UTC 2025-06-01). Caps: 0.01 USDC per call, 0.1 per session (0.096 left), 0.01 ' +
          'per day (0 left).',
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
})
