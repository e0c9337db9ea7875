import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { fixedEnv, toolErrorOf } from '../../test/helpers/tools.js'
import { hash, hashInput, hashTool } from './hash.js'

const b64 = (hex: string) => Buffer.from(hex, 'hex').toString('base64')

// FIPS 180-2 appendix examples ("abc") and the well-known empty-message digests.
const VECTORS = [
  ['SHA-256', 'abc', 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad'],
  [
    'SHA-384',
    'abc',
    'cb00753f45a35e8bb5a03d699ac65007272c32ab0eded1631a8b605a43ff5bed8086072ba1e7cc2358baeca134c825a7',
  ],
  [
    'SHA-512',
    'abc',
    'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
  ],
  ['SHA-256', '', 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855'],
  [
    'SHA-384',
    '',
    '38b060a751ac96384cd9327eb1b1e36a21fdb71114be07434c0cc7bf63f6e1da274edebfe76f65fbd51ad2f14898b95b',
  ],
  [
    'SHA-512',
    '',
    'cf83e1357eefb8bdf1542850d66d8007d620e4050b5715dc83f4a921d36ce9ce47d0d13c5d85f2b0ff8318d2877eec2f63b931bd47417a81a538327af927da3e',
  ],
  [
    'SHA-256',
    'abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq',
    '248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1',
  ],
] as const

describe('hash', () => {
  it.each(VECTORS)('%s(%j) matches FIPS 180-2', (algorithm, input, hex) => {
    expect(hash({ input, algorithm })).toEqual({
      algorithm,
      hex,
      base64: b64(hex),
      input_bytes: input.length,
    })
  })

  it('defaults to SHA-256 of the empty string', () => {
    const parsed = hashInput.parse({})
    expect(parsed).toEqual({ input: '', algorithm: 'SHA-256' })
    expect(hashTool.run(parsed, fixedEnv).hex).toBe(VECTORS[3][2])
  })

  it('hashes the UTF-8 bytes of the text and counts them', () => {
    const result = hash({ input: '€', algorithm: 'SHA-256' })
    expect(result.input_bytes).toBe(3)
    const explicitBytes = createHash('sha256')
      .update(Uint8Array.of(0xe2, 0x82, 0xac))
      .digest('hex')
    expect(result.hex).toBe(explicitBytes)
  })

  it('rejects lone surrogates instead of hashing U+FFFD', () => {
    const error = toolErrorOf(() => hash({ input: 'ab\uD800', algorithm: 'SHA-256' }))
    expect(error.code).toBe('invalid_unicode')
    expect(error.details).toEqual({ field: 'input', offset: 2 })
  })

  it('rejects unknown keys, unknown algorithms and more than 1 MiB of UTF-8', () => {
    expect(hashInput.safeParse({ input: 'a', extra: 1 }).success).toBe(false)
    expect(hashInput.safeParse({ algorithm: 'MD5' }).success).toBe(false)
    expect(hashInput.safeParse({ input: 'a'.repeat(1024 * 1024) }).success).toBe(true)
    expect(hashInput.safeParse({ input: 'a'.repeat(1024 * 1024 + 1) }).success).toBe(false)
    // 349,526 three-byte characters are 1,048,578 bytes but only 349,526 UTF-16 units.
    expect(hashInput.safeParse({ input: '€'.repeat(349_526) }).success).toBe(false)
  })
})
