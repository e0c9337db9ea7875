import { decodePaymentSignatureHeader } from '@x402/core/http'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decodePaymentHeader } from './payment-header.js'

const required = {
  x402Version: 2,
  error: 'Payment required',
  resource: { url: 'https://tools.example/hash', description: 'Hachage « SHA-2 » ✓ 𝄞' },
}
const x402Header = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64')

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
    const read = decodePaymentHeader(text)
    return 'value' in read ? { value: read.value } : 'refused'
  }

  it('decodes what the SDK decodes, to the same value, with the size of its JSON', () => {
    const header = x402Header(required)
    expect(decodePaymentHeader(header)).toEqual({
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
    expect(decodePaymentHeader('e30=a')).toEqual({ problem: 'base64' })
    expect(decodePaymentHeader(json('not json'))).toEqual({ problem: 'json' })
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
  const kind = (read: ReturnType<typeof decodePaymentHeader>) =>
    'value' in read ? 'ok' : read.problem

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
          expect([changed, kind(decodePaymentHeader(changed))]).toEqual([changed, sdkKind(changed)])
        },
      ),
      { numRuns: 3000 },
    )
  })

  it('refuses JSON nested deeper than its bound before parsing it, and parses it at the bound', () => {
    const nested = (depth: number) => ({
      ...required,
      extra: JSON.parse(`${'['.repeat(depth)}${']'.repeat(depth)}`),
    })
    // The payment's object is the first level: 31 arrays in it make 32 levels.
    expect(decodePaymentHeader(x402Header(nested(31)), 32)).toEqual({
      value: nested(31),
      bytes: Buffer.byteLength(JSON.stringify(nested(31))),
    })
    expect(decodePaymentHeader(x402Header(nested(32)), 32)).toEqual({ problem: 'depth' })
    const deep = Buffer.from(`{"a":${'['.repeat(3000)}"${'x'.repeat(16_000)}"${']'.repeat(3000)}}`)
    expect(decodePaymentHeader(deep.toString('base64'), 32)).toEqual({ problem: 'depth' })
    // Without a bound, the SDK's rules alone: it parses.
    expect(ours(deep.toString('base64'))).toEqual(sdk(deep.toString('base64')))
  })
})
