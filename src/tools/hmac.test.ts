import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../test/helpers/tools.js'
import { hmac, hmacDigest, hmacInput } from './hmac.js'

const bytes = (hex: string) => Buffer.from(hex, 'hex')
const ascii = (text: string) => Buffer.from(text, 'latin1')

// RFC 4231 section 4 test cases 1-4, 6 and 7 (case 5, truncation, is out of scope).
const key131 = bytes('aa'.repeat(131))
const RFC4231 = [
  {
    name: 'case 1',
    key: bytes('0b'.repeat(20)),
    data: ascii('Hi There'),
    'SHA-256': 'b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7',
    'SHA-384':
      'afd03944d84895626b0825f4ab46907f15f9dadbe4101ec682aa034c7cebc59cfaea9ea9076ede7f4af152e8b2fa9cb6',
    'SHA-512':
      '87aa7cdea5ef619d4ff0b4241a1d6cb02379f4e2ce4ec2787ad0b30545e17cdedaa833b7d6b8a702038b274eaea3f4e4be9d914eeb61f1702e696c203a126854',
  },
  {
    name: 'case 2',
    key: ascii('Jefe'),
    data: ascii('what do ya want for nothing?'),
    'SHA-256': '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    'SHA-384':
      'af45d2e376484031617f78d2b58a6b1b9c7ef464f5a01b47e42ec3736322445e8e2240ca5e69e2c78b3239ecfab21649',
    'SHA-512':
      '164b7a7bfcf819e2e395fbe73b56e0a387bd64222e831fd610270cd7ea2505549758bf75c05a994a6d034f65f8f0e6fdcaeab1a34d4a6b4b636e070a38bce737',
  },
  {
    name: 'case 3',
    key: bytes('aa'.repeat(20)),
    data: bytes('dd'.repeat(50)),
    'SHA-256': '773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe',
    'SHA-384':
      '88062608d3e6ad8a0aa2ace014c8a86f0aa635d947ac9febe83ef4e55966144b2a5ab39dc13814b94e3ab6e101a34f27',
    'SHA-512':
      'fa73b0089d56a284efb0f0756c890be9b1b5dbdd8ee81a3655f83e33b2279d39bf3e848279a722c806b485a47e67c807b946a337bee8942674278859e13292fb',
  },
  {
    name: 'case 4',
    key: bytes('0102030405060708090a0b0c0d0e0f10111213141516171819'),
    data: bytes('cd'.repeat(50)),
    'SHA-256': '82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b',
    'SHA-384':
      '3e8a69b7783c25851933ab6290af6ca77a9981480850009cc5577c6e1f573b4e6801dd23c4a7d679ccf8a386c674cffb',
    'SHA-512':
      'b0ba465637458c6990e5a8c5f61d4af7e576d97ff94b872de76f8050361ee3dba91ca5c11aa25eb4d679275cc5788063a5f19741120c4f2de2adebeb10a298dd',
  },
  {
    name: 'case 6',
    key: key131,
    data: ascii('Test Using Larger Than Block-Size Key - Hash Key First'),
    'SHA-256': '60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54',
    'SHA-384':
      '4ece084485813e9088d2c63a041bc5b44f9ef1012a2b588f3cd11f05033ac4c60c2ef6ab4030fe8296248df163f44952',
    'SHA-512':
      '80b24263c7c1a3ebb71493c1dd7be8b49b46d1f41b4aeec1121b013783f8f3526b56d037e05f2598bd0fd2215d6a1e5295e64f73f63f0aec8b915a985d786598',
  },
  {
    name: 'case 7',
    key: key131,
    data: ascii(
      'This is a test using a larger than block-size key and a larger than block-size data. The key needs to be hashed before being used by the HMAC algorithm.',
    ),
    'SHA-256': '9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2',
    'SHA-384':
      '6617178e941f020d351e2f254e8fd32c602420feb0b8fb9adccebb82461e99c5a678cc31e799176d3860e6110c46523e',
    'SHA-512':
      'e37b6a775dc87dbaa4dfa9f96e5e3ffddebd71f8867289865df5a32d20cdc944b6022cac3c4982b10d5eeb55c3e4de15134676fb6de0446065c97440fa8c6a58',
  },
]
const ALGORITHMS = ['SHA-256', 'SHA-384', 'SHA-512'] as const

describe('hmacDigest (RFC 4231, binary keys)', () => {
  for (const vector of RFC4231) {
    for (const algorithm of ALGORITHMS) {
      it(`${vector.name} ${algorithm}`, () => {
        expect(hmacDigest(algorithm, vector.key, vector.data).toString('hex')).toBe(
          vector[algorithm],
        )
      })
    }
  }
})

describe('hmac tool (UTF-8 secret and message)', () => {
  // Cases 1, 2, 6 and 7 have keys and data that are UTF-8 text (case 1's key is twenty 0x0b
  // characters; 6 and 7 use a 0xaa key, which is not UTF-8, so only cases 1 and 2 fit).
  it.each(ALGORITHMS)('RFC 4231 cases 1 and 2 via the tool, %s', (algorithm) => {
    const [one, two] = RFC4231 as [(typeof RFC4231)[0], (typeof RFC4231)[0]]
    const first = hmac({ input: 'Hi There', secret: '\x0b'.repeat(20), algorithm })
    expect(first).toEqual({
      algorithm,
      hex: one[algorithm],
      base64: bytes(one[algorithm]).toString('base64'),
    })
    expect(hmac({ input: 'what do ya want for nothing?', secret: 'Jefe', algorithm }).hex).toBe(
      two[algorithm],
    )
  })

  const jefe = {
    input: 'what do ya want for nothing?',
    secret: 'Jefe',
    algorithm: 'SHA-256' as const,
  }
  const digest = RFC4231[1]?.['SHA-256'] as string

  it('verifies a matching expected_hex in either case', () => {
    expect(hmac({ ...jefe, expected_hex: digest }).verified).toBe(true)
    const upper = hmac({ ...jefe, expected_hex: digest.toUpperCase() })
    expect(upper).toMatchObject({ verified: true })
    expect(upper).not.toHaveProperty('reason')
  })

  it('reports a same-length mismatch', () => {
    const wrong = `${digest.slice(0, -1)}${digest.endsWith('3') ? '4' : '3'}`
    expect(hmac({ ...jefe, expected_hex: wrong })).toMatchObject({
      verified: false,
      reason: 'mismatch',
    })
  })

  it('reports a wrong length as length_mismatch, never a throw', () => {
    for (const expected_hex of [
      '',
      'ab',
      digest.slice(0, -1),
      `${digest}00`,
      digest.slice(0, 64 - 2),
    ]) {
      expect(hmac({ ...jefe, expected_hex })).toMatchObject({
        verified: false,
        reason: 'length_mismatch',
      })
    }
    // A SHA-256 digest offered to SHA-512 is a length mismatch too.
    expect(hmac({ ...jefe, algorithm: 'SHA-512', expected_hex: digest }).reason).toBe(
      'length_mismatch',
    )
  })

  it('omits verified and reason without expected_hex', () => {
    const result = hmac(jefe)
    expect(Object.keys(result).sort()).toEqual(['algorithm', 'base64', 'hex'])
  })

  it('never echoes the secret, in results or errors', () => {
    const secret = 'very-secret-value'
    const result = JSON.stringify(hmac({ input: 'x', secret, algorithm: 'SHA-256' }))
    expect(result).not.toContain(secret)
    const error = toolErrorOf(() =>
      hmac({ input: 'x', secret: `${secret}\uD800`, algorithm: 'SHA-256' }),
    )
    expect(error.code).toBe('invalid_unicode')
    expect(error.details).toEqual({ field: 'secret', offset: secret.length })
    expect(`${error.message}${JSON.stringify(error.details)}`).not.toContain(secret)
  })

  it('validates the request shape', () => {
    expect(hmacInput.safeParse({ secret: '' }).success).toBe(false)
    expect(hmacInput.safeParse({}).success).toBe(false)
    expect(hmacInput.safeParse({ secret: 'k', expected_hex: 'xyz' }).success).toBe(false)
    expect(hmacInput.safeParse({ secret: 'k', expected_hex: 'a'.repeat(1025) }).success).toBe(false)
    expect(hmacInput.parse({ secret: 'k' })).toEqual({
      secret: 'k',
      input: '',
      algorithm: 'SHA-256',
    })
  })
})
