import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentRequiredHeader,
  encodePaymentResponseHeader,
} from '@x402/core/http'
import type { PaymentRequired, SettleResponse } from '@x402/core/types'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { paymentRequiredHeader, readX402Header, settlementHeader, x402Header } from './headers.js'

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

describe('x402 header decoding', () => {
  /** The SDK's verdict on a header: its value, or that it refused it. */
  const sdk = (text: string) => {
    try {
      return { value: decodePaymentSignatureHeader(text) as unknown }
    } catch {
      return 'refused'
    }
  }
  const ours = (text: string) => {
    const read = readX402Header(text)
    return 'value' in read ? { value: read.value } : 'refused'
  }

  it('decodes what the SDK decodes, to the same value, with the size of its JSON', () => {
    const header = x402Header(required)
    expect(readX402Header(header)).toEqual({
      value: required,
      bytes: Buffer.byteLength(JSON.stringify(required)),
    })
    expect(ours(header)).toEqual(sdk(header))
  })

  it('accepts and refuses exactly the texts the SDK does: padding, lengths, alphabet, BOM, bad UTF-8', () => {
    const json = (text: string) => Buffer.from(text).toString('base64')
    const cases = [
      '',
      'e30=',
      'e30',
      'e3',
      'e30==',
      'e30=a',
      'e 30=',
      'e30-',
      '====',
      json('{"a":1}').replace(/=+$/, ''),
      `${json('{"a":1}')}A`,
      Buffer.from([0xef, 0xbb, 0xbf, ...Buffer.from('{"bom":true}')]).toString('base64'),
      Buffer.from([0x7b, 0x22, 0xff, 0x22, 0x3a, 0x31, 0x7d]).toString('base64'),
      json('[1,2]'),
      json('not json'),
    ]
    for (const text of cases) expect([text, ours(text)]).toEqual([text, sdk(text)])
    expect(readX402Header('e30=a')).toEqual({ problem: 'base64' })
    expect(readX402Header(json('not json'))).toEqual({ problem: 'json' })
  })

  it('agrees with the SDK on any text of Base64 characters', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: fc.constantFrom(...'AZaz09+/=e3'.split('')) }),
          fc.json().map((text) => Buffer.from(text).toString('base64')),
          fc.json().map((text) => Buffer.from(text).toString('base64').replace(/=+$/, '')),
        ),
        (text) => {
          expect(ours(text)).toEqual(sdk(text))
        },
      ),
      { numRuns: 2000 },
    )
  })

  /** Why the SDK refuses a text: its Base64 check or `atob` (`base64`), or `JSON.parse` (`json`). */
  const sdkKind = (text: string) => {
    try {
      decodePaymentSignatureHeader(text)
      return 'ok'
    } catch (error) {
      return error instanceof SyntaxError ? 'json' : 'base64'
    }
  }
  const kind = (read: ReturnType<typeof readX402Header>) => ('value' in read ? 'ok' : read.problem)

  it('refuses for the same reason as the SDK texts holding characters outside the alphabet (base64url, spaces, padding inside, non-ASCII)', () => {
    const valid = fc.json().map((text) => Buffer.from(text).toString('base64'))
    fc.assert(
      fc.property(
        valid,
        fc.nat(),
        fc.constantFrom('-', '_', ' ', '\n', '=', '==', '===', '.', 'é', '\u0000', 'A', '%'),
        (text, at, insert) => {
          // One character replaced (the length rules then hold for the text as a whole), or
          // inserted where the text is empty.
          const position = at % Math.max(text.length, 1)
          const changed = text.slice(0, position) + insert + text.slice(position + 1)
          expect([changed, kind(readX402Header(changed))]).toEqual([changed, sdkKind(changed)])
        },
      ),
      { numRuns: 3000 },
    )
  })
})
