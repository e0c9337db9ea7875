import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../../test/helpers/tools.js'
import { payloadInspect, payloadInspectInput, shannonEntropy } from './index.js'

const RFC7519_JWS =
  'eyJ0eXAiOiJKV1QiLA0KICJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'

const typesOf = (input: string) => payloadInspect({ input }).candidates.map((c) => c.type)

describe('payloadInspect', () => {
  it('ranks hex above Base64 for "deadbeef", which is both', () => {
    const result = payloadInspect({ input: 'deadbeef' })
    expect(result.detected).toBe('hex')
    expect(typesOf('deadbeef')).toEqual(['hex', 'base64', 'text'])
    const [hex, base64] = result.candidates
    expect((hex?.confidence ?? 0) > (base64?.confidence ?? 1)).toBe(true)
    expect(result.length).toBe(8)
  })

  it('detects each kind', () => {
    const cases = [
      ['{"a": [1, 2]}', 'json'],
      ['[1, 2, 3]', 'json'],
      [RFC7519_JWS, 'jwt'],
      [`Bearer ${RFC7519_JWS}`, 'jwt'],
      ['aGVsbG8gd29ybGQ=', 'base64'],
      ['SGVsbG8sIFdvcmxkIQ', 'base64'],
      ['0x4a6f6e', 'hex'],
      ['e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855', 'hex'],
      ['q=caf%C3%A9&lang=fr', 'url_encoded'],
      ['a=1&b=two', 'url_encoded'],
      ['hello world', 'text'],
      ['test', 'text'],
      ['process.exit(1)', 'text'],
    ] as const
    for (const [input, type] of cases) {
      expect(payloadInspect({ input }).detected, input).toBe(type)
    }
  })

  it('explains its candidates and sorts them by confidence', () => {
    const result = payloadInspect({ input: RFC7519_JWS })
    expect(result.candidates[0]).toEqual({
      type: 'jwt',
      confidence: 0.97,
      reasons: [
        '3 base64url segments separated by dots',
        'header decodes to JSON with alg "HS256"',
        'payload decodes to a JSON object',
      ],
    })
    for (const input of ['deadbeef', RFC7519_JWS, 'YWJj', '{"a":1}', '%41%42', '']) {
      const confidences = payloadInspect({ input }).candidates.map((c) => c.confidence)
      expect(confidences).toEqual([...confidences].sort((a, b) => b - a))
    }
  })

  it('always offers text as a low-confidence fallback', () => {
    for (const input of ['deadbeef', '{"a":1}', '', '\u0000\u0001']) {
      const text = payloadInspect({ input }).candidates.find((c) => c.type === 'text')
      expect(text?.confidence, input).toBeLessThanOrEqual(0.3)
    }
    expect(payloadInspect({ input: '' })).toEqual({
      detected: 'text',
      candidates: [
        { type: 'text', confidence: 0.1, reasons: ['fallback; 0% printable characters'] },
      ],
      length: 0,
      printable_ratio: 0,
      entropy_bits_per_byte: 0,
    })
  })

  it('measures UTF-8 length, printable ratio and byte entropy', () => {
    expect(payloadInspect({ input: '€' })).toMatchObject({
      length: 3,
      printable_ratio: 1,
      entropy_bits_per_byte: Math.round(Math.log2(3) * 10_000) / 10_000,
    })
    expect(payloadInspect({ input: 'a\u0000b\u0007' }).printable_ratio).toBe(0.5)
    expect(payloadInspect({ input: 'abab' }).entropy_bits_per_byte).toBe(1)
  })

  it('rejects lone surrogates', () => {
    expect(toolErrorOf(() => payloadInspect({ input: '\uD800' })).code).toBe('invalid_unicode')
  })

  it('requires input', () => {
    expect(payloadInspectInput.safeParse({}).success).toBe(false)
    expect(payloadInspectInput.safeParse({ input: 'x', mode: 'fast' }).success).toBe(false)
  })
})

describe('shannonEntropy', () => {
  it('is 0 for empty or constant input and log2(n) for n equally frequent bytes', () => {
    expect(shannonEntropy(new Uint8Array())).toBe(0)
    expect(shannonEntropy(new Uint8Array([7, 7, 7]))).toBe(0)
    expect(shannonEntropy(new Uint8Array([1, 2, 3, 4]))).toBe(2)
    expect(shannonEntropy(Uint8Array.from({ length: 256 }, (_, i) => i))).toBe(8)
  })
})
