import { describe, expect, it } from 'vitest'
import { type CountedNote, type CountedPayment, countNote, countPayment } from './counting.js'
import type { PaymentSample } from './metrics.js'

const BASE = 'eip155:8453'

function recorder() {
  const payments: PaymentSample[] = []
  const revenue: [string, string | bigint][] = []
  return {
    payments,
    revenue,
    payment: (sample: PaymentSample) => void payments.push(sample),
    settledAtomic: (network: string, amount: string | bigint) =>
      void revenue.push([network, amount]),
  }
}

const event = (outcome: CountedPayment['outcome']): CountedPayment => ({
  tool: 'hash',
  transport: 'http',
  network: BASE,
  amount: '1000',
  outcome,
})

describe('countPayment', () => {
  it('counts each outcome once and adds the revenue of a settled call only', () => {
    const metrics = recorder()
    for (const outcome of [
      'verified',
      'settled',
      'settle_failed',
      'tool_failed_unsettled',
    ] as const) {
      countPayment(metrics, event(outcome))
    }
    expect(metrics.payments).toEqual([
      { tool: 'hash', network: BASE, transport: 'http', outcome: 'settled' },
      { tool: 'hash', network: BASE, transport: 'http', outcome: 'settle_failed' },
      { tool: 'hash', network: BASE, transport: 'http', outcome: 'tool_failed_unsettled' },
    ])
    expect(metrics.revenue).toEqual([[BASE, '1000']])
  })
})

describe('countNote', () => {
  it('counts refusals, failed verifies and replays with their code, an unknown network as unknown', () => {
    const metrics = recorder()
    const notes: CountedNote[] = [
      { tool: 'hmac', transport: 'mcp', outcome: 'refused', code: 'invalid_payment' },
      {
        tool: 'hash',
        transport: 'http',
        network: BASE,
        outcome: 'verify_failed',
        code: 'insufficient_funds',
      },
      { tool: 'hash', transport: 'http', network: BASE, outcome: 'replayed' },
      { tool: 'hash', transport: 'http', network: BASE, outcome: 'settle_unknown' },
    ]
    for (const note of notes) countNote(metrics, note)
    expect(metrics.payments).toEqual([
      {
        tool: 'hmac',
        network: 'unknown',
        transport: 'mcp',
        outcome: 'refused',
        code: 'invalid_payment',
      },
      {
        tool: 'hash',
        network: BASE,
        transport: 'http',
        outcome: 'verify_failed',
        code: 'insufficient_funds',
      },
      { tool: 'hash', network: BASE, transport: 'http', outcome: 'replayed' },
    ])
    expect(metrics.revenue).toEqual([])
  })
})
