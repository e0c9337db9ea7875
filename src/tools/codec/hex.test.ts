import { describe, expect, it } from 'vitest'
import { toolErrorOf as errorOf } from '../test-helpers.js'
import { decodeHexStrict, encodeHex } from './hex.js'

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
