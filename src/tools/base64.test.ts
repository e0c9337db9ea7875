import { describe, expect, it } from 'vitest'
import { fixedEnv, RFC4648_BASE64 as RFC4648, toolErrorOf } from '../../test/helpers/tools.js'
import { base64, base64Input, base64Tool } from './base64.js'

describe('base64 encode', () => {
  it.each(RFC4648)('RFC 4648 section 10: %j', (plain, encoded) => {
    expect(base64({ mode: 'encode', input: plain })).toEqual({
      output: encoded,
      output_url: encoded.replace(/=+$/, ''),
      input_bytes: plain.length,
    })
  })

  it('encodes UTF-8 and gives the URL-safe form without padding', () => {
    expect(base64({ mode: 'encode', input: '€?>' })).toEqual({
      output: '4oKsPz4=',
      output_url: '4oKsPz4',
      input_bytes: 5,
    })
    expect(base64({ mode: 'encode', input: 'ÿþ' })).toEqual({
      output: 'w7/Dvg==',
      output_url: 'w7_Dvg',
      input_bytes: 4,
    })
  })
})

describe('base64 decode', () => {
  it.each(RFC4648)('RFC 4648 section 10: %j', (plain, encoded) => {
    expect(base64({ mode: 'decode', input: encoded })).toEqual({
      text: plain,
      utf8_valid: true,
      byte_length: plain.length,
      alphabet: 'standard',
      padded: encoded.endsWith('='),
    })
  })

  it('decodes base64url without padding', () => {
    expect(base64({ mode: 'decode', input: 'w7_Dvg' })).toEqual({
      text: 'ÿþ',
      utf8_valid: true,
      byte_length: 4,
      alphabet: 'url',
      padded: false,
    })
  })

  it('never replaces invalid UTF-8: text null, hex instead', () => {
    expect(base64({ mode: 'decode', input: '/+7dzA==' })).toEqual({
      text: null,
      utf8_valid: false,
      byte_length: 4,
      alphabet: 'standard',
      padded: true,
      hex: 'ffeeddcc',
    })
  })

  it('rejects malformed Base64 with invalid_base64 and the offset', () => {
    const cases = [
      ['Zm9v!', 'invalid_character', 4],
      ['Zm+v_w', 'mixed_alphabet', 4],
      ['Zg==Zg', 'misplaced_padding', 2],
      ['Zm8==', 'bad_padding', 3],
      ['Zm9vY', 'bad_length', 4],
    ] as const
    for (const [input, reason, offset] of cases) {
      const error = toolErrorOf(() => base64({ mode: 'decode', input }))
      expect(error.code).toBe('invalid_base64')
      expect(error.details).toEqual({ reason, offset })
    }
  })

  it('rejects lone surrogates in either mode', () => {
    for (const mode of ['encode', 'decode'] as const) {
      expect(toolErrorOf(() => base64({ mode, input: 'Zm9v\uDC00' })).code).toBe('invalid_unicode')
    }
  })

  it('requires mode and rejects unknown keys', () => {
    expect(base64Input.safeParse({ input: 'x' }).success).toBe(false)
    expect(base64Input.safeParse({ mode: 'encode', url: true }).success).toBe(false)
    expect(base64Tool.run(base64Input.parse({ mode: 'decode' }), fixedEnv)).toEqual({
      text: '',
      utf8_valid: true,
      byte_length: 0,
      alphabet: 'standard',
      padded: false,
    })
  })
})
