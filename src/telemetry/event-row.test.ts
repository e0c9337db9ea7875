import { createHmac } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { settlementEventId, toEventRow } from './event-row.js'
import type { PaymentEvent } from './types.js'

const PAYER = '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B'
const event: PaymentEvent = {
  tool: 'json-validate',
  transport: 'mcp',
  network: 'eip155:8453',
  amount: '001000',
  outcome: 'settled',
  payer: PAYER,
}

describe('toEventRow', () => {
  it('replaces the payer by its HMAC key and adds a time-ordered UUID (version 7)', () => {
    const result = toEventRow(event, 'salt', 1_750_000_000_000)
    if (!result.ok) throw new Error(`rejected ${result.field}`)
    const { id, ...rest } = result.row
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(rest).toEqual({
      at: 1_750_000_000_000,
      tool: 'json-validate',
      transport: 'mcp',
      network: 'eip155:8453',
      amount: '1000',
      outcome: 'settled',
      scheme: 'exact',
      payerKey: createHmac('sha256', 'salt').update(PAYER.toLowerCase()).digest('hex'),
    })
    expect(JSON.stringify(result.row).toLowerCase()).not.toContain(PAYER.slice(2).toLowerCase())
    // Ids of one millisecond are in random order (uuid-v7.ts): the next id comes a millisecond on.
    const made = Date.now()
    while (Date.now() === made) {}
    const again = toEventRow(event, 'salt', 0)
    // Later ids sort after earlier ones, so inserts append to the id index.
    expect(again.ok && again.row.id > id).toBe(true)
  })

  it('keeps the event time and stores no key without a payer', () => {
    const result = toEventRow({ ...event, payer: undefined, at: 5 }, 'salt', 99)
    expect(result.ok && result.row).toMatchObject({ at: 5, payerKey: null })
  })

  it.each([
    [{ tool: '' }, 'tool'],
    [{ tool: 'x'.repeat(101) }, 'tool'],
    [{ transport: 'ws' }, 'transport'],
    [{ network: '' }, 'network'],
    [{ amount: '1.5' }, 'amount'],
    [{ amount: '-1' }, 'amount'],
    [{ amount: '9223372036854775808' }, 'amount'],
    [{ amount: 1000 }, 'amount'],
    [{ outcome: 'refunded' }, 'outcome'],
    [{ scheme: 'upto' }, 'scheme'],
    [{ scheme: '' }, 'scheme'],
    [{ at: -1 }, 'at'],
    [{ at: Number.NaN }, 'at'],
    [{ payer: 42 }, 'payer'],
    [{ id: 'not-a-uuid' }, 'id'],
  ])('rejects %o as an invalid %s', (patch, field) => {
    expect(toEventRow({ ...event, ...patch } as PaymentEvent, 'salt', 0)).toEqual({
      ok: false,
      field,
    })
  })

  it('keeps the scheme of a voucher call, and reads an absent scheme as exact', () => {
    const voucher = toEventRow({ ...event, scheme: 'batch-settlement' }, 'salt', 0)
    expect(voucher.ok && voucher.row.scheme).toBe('batch-settlement')
    const plain = toEventRow({ ...event, scheme: undefined }, 'salt', 0)
    expect(plain.ok && plain.row.scheme).toBe('exact')
  })

  it('accepts the largest 64-bit amount', () => {
    const result = toEventRow({ ...event, amount: '9223372036854775807' }, 'salt', 0)
    expect(result.ok && result.row.amount).toBe('9223372036854775807')
  })

  it('keeps the id of a settlement outcome, the same for the same payment and outcome', () => {
    const id = settlementEventId('pay:abc', 'settled')
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(settlementEventId('pay:abc', 'settled')).toBe(id)
    expect(settlementEventId('pay:abc', 'settle_failed')).not.toBe(id)
    const result = toEventRow({ ...event, id }, 'salt', 0)
    expect(result.ok && result.row.id).toBe(id)
  })
})
