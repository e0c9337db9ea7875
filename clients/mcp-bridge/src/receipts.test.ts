import { createHash } from 'node:crypto'
import type { PaymentPayload } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { applyDefaults, canonicalSha256, createReceiptChecker } from './receipts.js'
import { listedTool, settled } from './test-support/fake-remote.js'
import { baseOffer } from './test-support/offers.js'

describe('applyDefaults', () => {
  const schema = {
    type: 'object',
    properties: {
      input: { type: 'string', default: '' },
      algorithm: { type: 'string', default: 'SHA-256' },
      options: {
        type: 'object',
        properties: { depth: { type: 'integer', default: 3 }, tags: { default: ['a'] } },
      },
      plain: { type: 'string' },
    },
  }

  it('adds the defaults of absent properties, in nested objects too, and keeps given values', () => {
    expect(applyDefaults(schema, {})).toEqual({ input: '', algorithm: 'SHA-256' })
    expect(applyDefaults(schema, { algorithm: 'SHA-512', options: {} })).toEqual({
      input: '',
      algorithm: 'SHA-512',
      options: { depth: 3, tags: ['a'] },
    })
    // A given null is a value, not an absence.
    expect(applyDefaults(schema, { input: null })).toEqual({ input: null, algorithm: 'SHA-256' })
  })

  it('copies defaults, and passes non-objects and schemas without properties through', () => {
    const first = applyDefaults(schema, { options: {} }) as { options: { tags: string[] } }
    first.options.tags.push('b')
    expect(applyDefaults(schema, { options: {} })).toMatchObject({ options: { tags: ['a'] } })
    expect(applyDefaults(schema, 'text')).toBe('text')
    expect(applyDefaults({ type: 'object' }, { a: 1 })).toEqual({ a: 1 })
  })
})

describe('canonicalSha256', () => {
  it('hashes the RFC 8785 form: key order and spacing do not matter', () => {
    const expected = createHash('sha256').update('{"a":[1,"x"],"b":1}').digest('hex')
    expect(canonicalSha256({ b: 1, a: [1, 'x'] })).toBe(expected)
    expect(canonicalSha256(JSON.parse('{ "a": [1, "x"], "b": 1 }'))).toBe(expected)
  })
})

describe('createReceiptChecker', () => {
  it("reports keys_unavailable when the service's JWKS cannot be fetched", async () => {
    const checker = createReceiptChecker({ serviceUrl: 'http://127.0.0.1:1' })
    const offer = baseOffer('1000')
    const payment = { x402Version: 2, accepted: offer, payload: {} } as PaymentPayload
    const paid = await settled(payment, 'payload_hash', { input: 'abc' })
    await expect(
      checker.check({
        tool: listedTool('payload_hash', '1000'),
        args: { input: 'abc' },
        paid,
        settlement: paid._meta['x402/payment-response'],
        offer,
      }),
    ).rejects.toMatchObject({ code: 'receipt_invalid', details: { reason: 'keys_unavailable' } })
  })
})
