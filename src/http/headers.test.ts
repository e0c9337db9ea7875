import {
  decodePaymentRequiredHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http'
import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { paymentRequiredHeader, settlementHeader, x402Header } from './headers.js'

const required: PaymentRequired = {
  x402Version: 2,
  error: 'Payment required',
  resource: { url: 'https://tools.example/hash', description: 'Hachage « SHA-2 » ✓ 𝄞' },
  accepts: [
    {
      scheme: 'exact',
      network: 'eip155:8453',
      amount: '1000',
      asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
      payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
      maxTimeoutSeconds: 60,
      extra: { name: 'USD Coin', version: '2' },
    },
  ],
}

describe('x402 header encoding', () => {
  it('produces exactly the SDK encoding, non-ASCII included, and decodes with the SDK', () => {
    expect(x402Header(required)).toBe(encodePaymentRequiredHeader(required))
    expect(paymentRequiredHeader(required)).toBe(encodePaymentRequiredHeader(required))
    expect(decodePaymentRequiredHeader(paymentRequiredHeader(required))).toEqual(required)
  })

  it('memoises per object, so a changed object must be a new object', () => {
    const first = paymentRequiredHeader(required)
    expect(paymentRequiredHeader(required)).toBe(first)
    expect(paymentRequiredHeader({ ...required, error: 'other' })).not.toBe(first)
  })

  it('drops extensionResponses from PAYMENT-RESPONSE, as the SDK does', () => {
    const settlement: SettleResponse = {
      success: true,
      transaction: '0xabc',
      network: 'eip155:8453',
      payer: '0x857b06519E91e3A54538791bDbb0E22373e36b66',
      extensionResponses: { bazaar: { status: 'success' } },
    }
    expect(settlementHeader(settlement)).toBe(encodePaymentResponseHeader(settlement))
    expect(Buffer.from(settlementHeader(settlement), 'base64').toString()).not.toContain('bazaar')
  })
})
