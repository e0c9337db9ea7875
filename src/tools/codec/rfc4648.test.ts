import { describe, expect, it } from 'vitest'
import { toolErrorOf as errorOf, RFC4648_BASE64 as RFC4648 } from '../../../test/helpers/tools.js'
import type { ToolError } from '../types.js'
import {
  decodeBase64Strict,
  decodeHexStrict,
  encodeBase64,
  encodeBase64Url,
  encodeHex,
} from './rfc4648.js'

const text = (value: string) => new TextEncoder().encode(value)
const str = (bytes: Uint8Array) => new TextDecoder().decode(bytes)

describe('encodeBase64 / encodeBase64Url', () => {
  it.each(RFC4648)('RFC 4648 section 10: %j -> %j', (plain, encoded) => {
    expect(encodeBase64(text(plain))).toBe(encoded)
    expect(encodeBase64Url(text(plain))).toBe(encoded.replace(/=+$/, ''))
  })

  it('uses - and _ in the URL alphabet', () => {
    expect(encodeBase64(new Uint8Array([0xfb, 0xff]))).toBe('+/8=')
    expect(encodeBase64Url(new Uint8Array([0xfb, 0xff]))).toBe('-_8')
  })
})

describe('decodeBase64Strict', () => {
  it.each(RFC4648)('RFC 4648 section 10: %j <- %j (padded and unpadded)', (plain, encoded) => {
    expect(str(decodeBase64Strict(encoded).bytes)).toBe(plain)
    expect(str(decodeBase64Strict(encoded.replace(/=+$/, '')).bytes)).toBe(plain)
  })

  it('reports alphabet and padding', () => {
    expect(decodeBase64Strict('+/8=')).toMatchObject({ alphabet: 'standard', padded: true })
    expect([...decodeBase64Strict('-_8').bytes]).toEqual([0xfb, 0xff])
    expect(decodeBase64Strict('-_8')).toMatchObject({ alphabet: 'url', padded: false })
    expect(decodeBase64Strict('Zm9v')).toMatchObject({ alphabet: 'standard', padded: false })
  })

  it('ignores ASCII whitespace anywhere, including inside padding', () => {
    expect(str(decodeBase64Strict(' Zm9v\r\nYmE\t=\n').bytes)).toBe('fooba')
    expect(str(decodeBase64Strict('Zg= =').bytes)).toBe('f')
  })

  it('names an invalid character and its offset in the original text', () => {
    const error = errorOf(() => decodeBase64Strict('Zm 9*v'))
    expect(error.code).toBe('invalid_base64')
    expect(error.details).toEqual({ reason: 'invalid_character', offset: 4 })
    expect(error.message).toBe('invalid character "*" (U+002A) at offset 4')
    expect(errorOf(() => decodeBase64Strict('Zm9€')).message).toBe(
      'invalid character "€" (U+20AC) at offset 3',
    )
  })

  it('counts bytes and names the byte in byte mode', () => {
    const error = errorOf(() => decodeBase64Strict('Zm\xc3', 'byte'))
    expect(error.message).toBe('invalid byte 0xC3 at offset 2')
    expect(error.details).toEqual({ reason: 'invalid_character', offset: 2 })
  })

  it('rejects mixing the standard and URL-safe alphabets', () => {
    const error = errorOf(() => decodeBase64Strict('ab+c-d=='))
    expect(error.details).toEqual({ reason: 'mixed_alphabet', offset: 4 })
    expect(errorOf(() => decodeBase64Strict('_a/b')).details).toEqual({
      reason: 'mixed_alphabet',
      offset: 2,
    })
  })

  it('rejects padding that is not at the end', () => {
    expect(errorOf(() => decodeBase64Strict('Zg==Zg==')).details).toEqual({
      reason: 'misplaced_padding',
      offset: 2,
    })
    expect(errorOf(() => decodeBase64Strict('Z=g=')).details?.reason).toBe('misplaced_padding')
  })

  it('rejects a wrong amount of padding', () => {
    expect(errorOf(() => decodeBase64Strict('Zg=')).details).toEqual({
      reason: 'bad_padding',
      offset: 2,
    })
    expect(errorOf(() => decodeBase64Strict('Zm9v=')).details?.reason).toBe('bad_padding')
    expect(errorOf(() => decodeBase64Strict('Zm9v====')).details?.reason).toBe('bad_padding')
    expect(errorOf(() => decodeBase64Strict('Z===')).details?.reason).toBe('bad_padding')
    expect(errorOf(() => decodeBase64Strict('=')).details?.reason).toBe('bad_padding')
  })

  it('rejects a length of 1 mod 4', () => {
    const error = errorOf(() => decodeBase64Strict('Zm9vY'))
    expect(error.details).toEqual({ reason: 'bad_length', offset: 4 })
    expect(errorOf(() => decodeBase64Strict('A')).details).toEqual({
      reason: 'bad_length',
      offset: 0,
    })
  })
})

describe('decodeBase64Strict fast path', () => {
  // A leading space forces the full scan (the fast path takes no whitespace), so the two paths
  // must agree on every input: same bytes, alphabet and padding, or the same rejection reason.
  const outcome = (text: string) => {
    try {
      const { bytes, alphabet, padded } = decodeBase64Strict(text)
      return { hex: Buffer.from(bytes).toString('hex'), alphabet, padded }
    } catch (error) {
      return { reason: (error as ToolError).details?.reason }
    }
  }

  it('agrees with the full scan on 5,000 pseudo-random inputs', () => {
    const chars = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/-_=='
    let seed = 42
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed
    }
    let fast = 0
    for (let n = 0; n < 5000; n++) {
      const length = next() % 13
      let text = ''
      for (let i = 0; i < length; i++) text += chars[next() % chars.length]
      if (n % 3 === 0) text = `${text.replace(/[=]/g, '')}${'='.repeat(next() % 3)}`
      const direct = outcome(text)
      expect(outcome(` ${text}`), JSON.stringify(text)).toEqual(direct)
      if (!('reason' in direct)) fast++
    }
    expect(fast).toBeGreaterThan(500)
  })
})

describe('hex codec', () => {
  it('encodes RFC 4648 section 10 base16 vectors in lowercase', () => {
    // RFC 4648 gives "666F6F626172" for "foobar"; we emit lowercase.
    expect(encodeHex(new TextEncoder().encode('foobar'))).toBe('666f6f626172')
    expect(encodeHex(new TextEncoder().encode('f'))).toBe('66')
    expect(encodeHex(new Uint8Array())).toBe('')
  })

  it('decodes either case', () => {
    expect([...decodeHexStrict('DEadbeEF')]).toEqual([0xde, 0xad, 0xbe, 0xef])
    expect(decodeHexStrict('').length).toBe(0)
  })

  it('rejects non-hex characters at their offset', () => {
    const error = errorOf(() => decodeHexStrict('abcg'))
    expect(error.code).toBe('invalid_hex')
    expect(error.details).toEqual({ reason: 'invalid_character', offset: 3 })
    expect(error.message).toBe('invalid character "g" (U+0067) at offset 3')
    expect(errorOf(() => decodeHexStrict('ab cd')).details?.offset).toBe(2)
    expect(errorOf(() => decodeHexStrict('0x00')).details?.offset).toBe(1)
  })

  it('rejects an odd number of digits', () => {
    const error = errorOf(() => decodeHexStrict('abc'))
    expect(error.details).toEqual({ reason: 'odd_length', offset: 2 })
  })
})
