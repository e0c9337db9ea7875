import { createHash } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { toolErrorOf } from '../../../test/helpers/tools.js'
import { MAX_OPERATIONS, type PipelineInput, pipeline, pipelineInput } from './index.js'

type Op = PipelineInput['operations'][number]['type']
const run = (input: unknown, ...ops: Op[]) =>
  pipeline({ input, operations: ops.map((type) => ({ type })) })

const fromBits = (hex: string) => Buffer.from(hex, 'hex').readDoubleBE(0)

describe('pipeline: RFC 8785 (JCS)', () => {
  // Section 3.2.2 sample input and section 3.2.3 output.
  const sample = `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\\u20ac$\\u000F\\u000aA'\\u0042\\u0022\\u005c\\\\\\"\\/",
  "literals": [null, true, false]
}`
  const canonical =
    '{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\\u000f\\nA\'B\\"\\\\\\\\\\"/"}'

  it('canonicalises the section 3.2.2 sample given as text (bytes parsed first)', () => {
    expect(run(sample, 'json_canonicalize')).toEqual({
      output_type: 'text',
      output: canonical,
      steps: [
        {
          op: 'json_canonicalize',
          in_type: 'bytes',
          out_type: 'bytes',
          bytes_out: Buffer.byteLength(canonical),
          coerced: true,
        },
      ],
    })
  })

  it('canonicalises the same sample given as a JSON value', () => {
    const result = run(JSON.parse(sample), 'json_canonicalize')
    expect(result.output).toBe(canonical)
    expect(result.steps[0]).not.toHaveProperty('coerced')
  })

  it('sorts properties by UTF-16 code units (section 3.2.3)', () => {
    const value = {
      '\u20ac': 'Euro Sign',
      '\r': 'Carriage Return',
      '\ufb33': 'Hebrew Letter Dalet With Dagesh',
      '1': 'One',
      '\ud83d\ude00': 'Emoji: Grinning Face',
      '\u0080': 'Control',
      '\u00f6': 'Latin Small Letter O With Diaeresis',
    }
    expect(run(value, 'json_canonicalize').output).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","ö":"Latin Small Letter O With Diaeresis","€":"Euro Sign","😀":"Emoji: Grinning Face","\ufb33":"Hebrew Letter Dalet With Dagesh"}',
    )
  })

  // Appendix B: IEEE 754 bit patterns and their canonical text.
  const NUMBERS = [
    ['0000000000000000', '0'],
    ['8000000000000000', '0'],
    ['0000000000000001', '5e-324'],
    ['8000000000000001', '-5e-324'],
    ['7fefffffffffffff', '1.7976931348623157e+308'],
    ['ffefffffffffffff', '-1.7976931348623157e+308'],
    ['4340000000000000', '9007199254740992'],
    ['c340000000000000', '-9007199254740992'],
    ['4430000000000000', '295147905179352830000'],
    ['44b52d02c7e14af5', '9.999999999999997e+22'],
    ['44b52d02c7e14af6', '1e+23'],
    ['44b52d02c7e14af7', '1.0000000000000001e+23'],
    ['444b1ae4d6e2ef4e', '999999999999999700000'],
    ['444b1ae4d6e2ef4f', '999999999999999900000'],
    ['444b1ae4d6e2ef50', '1e+21'],
    ['3eb0c6f7a0b5ed8c', '9.999999999999997e-7'],
    ['3eb0c6f7a0b5ed8d', '0.000001'],
    ['41b3de4355555553', '333333333.3333332'],
    ['41b3de4355555554', '333333333.33333325'],
    ['41b3de4355555555', '333333333.3333333'],
    ['41b3de4355555556', '333333333.3333334'],
    ['41b3de4355555557', '333333333.33333343'],
    ['becbf647612f3696', '-0.0000033333333333333333'],
    ['43143ff3c1cb0959', '1424953923781206.2'],
  ] as const

  it.each(NUMBERS)('serialises the double %s as %s (appendix B)', (bits, text) => {
    expect(run([fromBits(bits)], 'json_canonicalize').output).toBe(`[${text}]`)
  })
})

describe('pipeline: RFC 4648 section 10 vectors', () => {
  const VECTORS = [
    ['', '', ''],
    ['f', 'Zg==', '66'],
    ['fo', 'Zm8=', '666f'],
    ['foo', 'Zm9v', '666f6f'],
    ['foob', 'Zm9vYg==', '666f6f62'],
    ['fooba', 'Zm9vYmE=', '666f6f6261'],
    ['foobar', 'Zm9vYmFy', '666f6f626172'],
  ] as const

  it.each(VECTORS)('%j -> %j (base64_encode), %j (hex_encode, lowercase)', (plain, b64, hex) => {
    expect(run(plain, 'base64_encode').output).toBe(b64)
    expect(run(plain, 'hex_encode').output).toBe(hex)
    expect(run(b64, 'base64_decode').output).toBe(plain)
    expect(run(hex.toUpperCase(), 'hex_decode').output).toBe(plain)
  })
})

describe('pipeline: operations and types', () => {
  it('records types, sizes and coercion per step', () => {
    expect(run({ b: 2, a: [1, 'x'] }, 'sha256', 'hex_decode', 'base64_encode')).toEqual({
      output_type: 'text',
      // SHA-256 of the RFC 8785 form, hex-decoded, Base64-encoded.
      output: createHash('sha256').update('{"a":[1,"x"],"b":2}').digest('base64'),
      steps: [
        { op: 'sha256', in_type: 'json', out_type: 'bytes', bytes_out: 64, coerced: true },
        { op: 'hex_decode', in_type: 'bytes', out_type: 'bytes', bytes_out: 32 },
        { op: 'base64_encode', in_type: 'bytes', out_type: 'bytes', bytes_out: 44 },
      ],
    })
  })

  it('hashes to lowercase hex text (FIPS 180-2 "abc")', () => {
    expect(run('abc', 'sha256').output).toBe(
      'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
    )
    expect(run('abc', 'sha512').output).toBe(
      'ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f',
    )
  })

  it('url-encodes per RFC 3986 and decodes without turning + into space', () => {
    expect(run("a b+c/ü!'()*~", 'url_encode').output).toBe('a%20b%2Bc%2F%C3%BC%21%27%28%29%2A~')
    expect(run('a+b%20c%C3%BC', 'url_decode').output).toBe('a+b cü')
  })

  it('parses JSON and returns a JSON value', () => {
    expect(run('{"a": [1, 2.50]}', 'json_parse')).toEqual({
      output_type: 'json',
      output: { a: [1, 2.5] },
      steps: [{ op: 'json_parse', in_type: 'bytes', out_type: 'json', bytes_out: 13 }],
    })
    expect(run(7, 'json_parse').steps[0]).toEqual({
      op: 'json_parse',
      in_type: 'json',
      out_type: 'json',
      bytes_out: 1,
      coerced: true,
    })
  })

  it('returns non-UTF-8 bytes as Base64 and hex', () => {
    expect(run('//79', 'base64_decode')).toEqual({
      output_type: 'binary',
      output: '//79',
      output_hex: 'fffefd',
      steps: [{ op: 'base64_decode', in_type: 'bytes', out_type: 'bytes', bytes_out: 3 }],
    })
  })

  it('passes a JSON input through unchanged by json_canonicalize round trip', () => {
    expect(run(['x', { z: null, a: true }], 'json_canonicalize', 'json_parse').output).toEqual([
      'x',
      { a: true, z: null },
    ])
  })
})

describe('pipeline: errors name the step and offset', () => {
  it('strict hex_decode', () => {
    const error = toolErrorOf(() =>
      run('hi', 'hex_encode', 'url_encode', 'hex_decode', 'hex_decode'),
    )
    // step 2 ok ("6869" has no reserved chars); step 3 decodes "hi" -> "hi" is not hex.
    expect(error.code).toBe('invalid_hex')
    expect(error.details).toEqual({
      reason: 'invalid_character',
      offset: 0,
      step: 3,
      op: 'hex_decode',
    })
    expect(error.message).toBe('operations[3] (hex_decode): invalid byte 0x68 at offset 0')
    expect(toolErrorOf(() => run('abc', 'hex_decode')).details).toEqual({
      reason: 'odd_length',
      offset: 2,
      step: 0,
      op: 'hex_decode',
    })
  })

  it('strict base64_decode', () => {
    // "QUJDREU=" decodes to "ABCDE": five Base64 characters, an impossible length.
    const error = toolErrorOf(() => run('QUJDREU=', 'base64_decode', 'base64_decode'))
    expect(error.code).toBe('invalid_base64')
    expect(error.details).toEqual({ step: 1, op: 'base64_decode', reason: 'bad_length', offset: 4 })
    expect(toolErrorOf(() => run('Zm9v\u00e9', 'base64_decode')).message).toBe(
      'operations[0] (base64_decode): invalid byte 0xC3 at offset 4',
    )
  })

  it('strict url_decode', () => {
    const error = toolErrorOf(() => run('ok%2', 'url_decode'))
    expect(error.code).toBe('invalid_url_encoding')
    expect(error.details).toEqual({ offset: 2, step: 0, op: 'url_decode' })
    expect(error.message).toBe(
      'operations[0] (url_decode): "%" at offset 2 is not followed by two hex digits',
    )
  })

  it('json_parse: invalid UTF-8, invalid JSON, lone surrogate escapes', () => {
    expect(toolErrorOf(() => run('/w==', 'base64_decode', 'json_parse')).details).toEqual({
      reason: 'utf8',
      step: 1,
      op: 'json_parse',
    })
    const syntax = toolErrorOf(() => run('{"a":', 'json_parse'))
    expect(syntax.code).toBe('json_parse_failed')
    expect(syntax.details).toEqual({ reason: 'syntax', step: 0, op: 'json_parse' })
    const surrogate = toolErrorOf(() => run('["\\ud800"]', 'json_parse'))
    expect(surrogate.code).toBe('invalid_unicode')
    expect(surrogate.details).toEqual({ field: '/0', offset: 0, step: 0, op: 'json_parse' })
  })

  it('caps intermediates at 4 MiB', () => {
    const input = 'x'.repeat(1024 * 1024)
    const error = toolErrorOf(() => run(input, 'hex_encode', 'hex_encode', 'hex_encode'))
    expect(error.code).toBe('intermediate_too_large')
    expect(error.details).toEqual({
      step: 2,
      op: 'hex_encode',
      size: 8 * 1024 * 1024,
      limit: 4 * 1024 * 1024,
    })
  })

  it('rejects lone surrogates and over-deep JSON input', () => {
    expect(toolErrorOf(() => run({ k: 'a\uD800' }, 'sha256')).details).toEqual({
      field: '/input/k',
      offset: 1,
    })
    let deep: unknown = 1
    for (let i = 0; i < 200; i++) deep = [deep]
    expect(toolErrorOf(() => run(deep, 'sha256')).code).toBe('input_too_deep')
  })
})

describe('pipelineInput', () => {
  const op = { type: 'sha256' }
  it(`accepts 1 to ${MAX_OPERATIONS} operations`, () => {
    expect(pipelineInput.safeParse({ input: 'x', operations: [] }).success).toBe(false)
    expect(pipelineInput.safeParse({ input: 'x', operations: Array(12).fill(op) }).success).toBe(
      true,
    )
    expect(pipelineInput.safeParse({ input: 'x', operations: Array(13).fill(op) }).success).toBe(
      false,
    )
  })

  it('requires input, known operation types and no extra keys', () => {
    expect(pipelineInput.safeParse({ operations: [op] }).success).toBe(false)
    expect(pipelineInput.safeParse({ input: null, operations: [op] }).success).toBe(true)
    expect(pipelineInput.safeParse({ input: 'x', operations: [{ type: 'rot13' }] }).success).toBe(
      false,
    )
    expect(
      pipelineInput.safeParse({ input: 'x', operations: [{ type: 'sha256', n: 1 }] }).success,
    ).toBe(false)
    expect(
      pipelineInput.safeParse({ input: 'x'.repeat(1024 * 1024 + 1), operations: [op] }).success,
    ).toBe(false)
  })

  // Found by fuzzing (test/tools.fuzz.test.ts): JSON.parse turns 1e400 into Infinity; canonicalize
  // then threw a plain Error (a 400 tool_failed instead of a documented code), and a json output
  // showed the number as null.
  it('refuses numbers beyond the double range in input and in parsed JSON', () => {
    const body = pipelineInput.parse(
      JSON.parse('{"input":{"a":1e400},"operations":[{"type":"sha256"}]}'),
    )
    const fromInput = toolErrorOf(() => pipeline(body))
    expect([fromInput.code, fromInput.details]).toEqual([
      'number_out_of_range',
      { field: '/input/a' },
    ])
    const parsed = toolErrorOf(() => run('[1e400]', 'json_parse'))
    expect([parsed.code, parsed.message, parsed.details]).toEqual([
      'number_out_of_range',
      'operations[0] (json_parse): /0 is a number beyond the IEEE 754 double range (such as 1e400), which JSON parsing turns into Infinity',
      { field: '/0', step: 0, op: 'json_parse' },
    ])
    // The fuzzer's own counterexample: hex of hex of a digest is 512 digits, one huge number.
    const digits = toolErrorOf(() =>
      run(null, 'sha512', 'hex_encode', 'hex_encode', 'json_parse', 'base64_encode'),
    )
    expect([digits.code, digits.details]).toEqual([
      'number_out_of_range',
      { field: '', step: 3, op: 'json_parse' },
    ])
    const overflow = toolErrorOf(() =>
      run(`1${'0'.repeat(400)}`, 'json_parse', 'json_canonicalize'),
    )
    expect([overflow.code, overflow.details]).toEqual([
      'number_out_of_range',
      { field: '', step: 0, op: 'json_parse' },
    ])
  })
})
