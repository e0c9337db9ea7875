import { describe, expect, it } from 'vitest'
import { locateMembers } from './json-locate.js'

const utf8 = (text: string) => new TextEncoder().encode(text)
const PATHS = [['method'], ['params', 'arguments'], ['params', '_meta', 'x402/payment']]

/** The located texts of `text`, decoded (undefined where nothing was located). */
const located = (text: string, paths: string[][] = PATHS) => {
  const bytes = utf8(text)
  return locateMembers(bytes, paths).map((r) =>
    r ? new TextDecoder().decode(bytes.subarray(r.start, r.end)) : undefined,
  )
}

describe('locateMembers', () => {
  it('finds the values at key paths as their exact text, whatever their kind', () => {
    const text = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: {
        name: 'payload_hash',
        arguments: { input: '{"x402/payment":1}', list: [[{ a: '}' }]] },
        _meta: { progressToken: 3, 'x402/payment': { x402Version: 2, payload: { s: '\\"' } } },
      },
    })
    expect(located(text)).toEqual([
      '"tools/call"',
      '{"input":"{\\"x402/payment\\":1}","list":[[{"a":"}"}]]}',
      '{"x402Version":2,"payload":{"s":"\\\\\\""}}',
    ])
    expect(located(' {"id" : 7 , "method":null}\n', [['id'], ['method'], ['absent']])).toEqual([
      '7',
      'null',
      undefined,
    ])
  })

  it('never takes a key inside a value, or a string value, for a member on the path', () => {
    const text = JSON.stringify({
      method: 'tools/call',
      params: {
        arguments: { _meta: { 'x402/payment': 'in the arguments' }, params: { _meta: 1 } },
        list: [{ _meta: { 'x402/payment': 'in an array' } }],
        note: '"_meta":{"x402/payment":"in a string"}',
      },
      x: { params: { _meta: { 'x402/payment': 'elsewhere' } } },
    })
    expect(located(text)[2]).toBeUndefined()
    expect(located(text)[1]).toBe(
      '{"_meta":{"x402/payment":"in the arguments"},"params":{"_meta":1}}',
    )
  })

  it('keeps the last of duplicate keys, as JSON.parse does, down the whole path', () => {
    const first = '{"params":{"_meta":{"x402/payment":1},"arguments":{}}'
    expect(located(`${first},"params":{"_meta":{}}}`)).toEqual([undefined, undefined, undefined])
    expect(located('{"params":{"_meta":{"x402/payment":1},"_meta":{"x402/payment":2}}}')[2]).toBe(
      '2',
    )
    expect(located('{"method":"a","method":"tools/call"}')[0]).toBe('"tools/call"')
  })

  it('locates nothing in a text that is not an object, never closes, or escapes a key on the path', () => {
    const none = [undefined, undefined, undefined]
    expect(located('[{"method":"tools/call"}]')).toEqual(none)
    expect(located('{"method":"tools/call"')).toEqual(none)
    expect(located('{"method":"tools/call","params":{"a":"unterminated}}')).toEqual(none)
    expect(located('{"m\\u0065thod":"tools/call"}')).toEqual(none)
    expect(located('{"method":"tools/call","params":{"_m\\u0065ta":{"x402/payment":1}}}')).toEqual(
      none,
    )
    // Escapes off the path, or in a key too long to spell one on it, are read past.
    const off = `{"x":{"a\\"b":1},"${'\\n'.repeat(60)}":2,"method":"x","params":{"arguments":{"\\u0041":1}}}`
    expect(located(off)).toEqual(['"x"', '{"\\u0041":1}', undefined])
  })

  it('locates nothing where an object along the paths holds more members than allowed', () => {
    const wide = JSON.stringify({
      method: 'tools/call',
      params: {
        ...Object.fromEntries(Array.from({ length: 63 }, (_, i) => [`k${i}`, i])),
        arguments: {},
      },
    })
    const bytes = utf8(wide)
    const paths = [['method'], ['params', 'arguments']]
    expect(locateMembers(bytes, paths, 64)[0]).toEqual({ start: 10, end: 22 })
    expect(locateMembers(bytes, paths, 63)).toEqual([undefined, undefined])
    // Members of values off the paths are not counted.
    const args = JSON.stringify({
      params: {
        arguments: Object.fromEntries([
          ['a', 1],
          ['b', 2],
        ]),
      },
    })
    expect(locateMembers(utf8(args), [['params', 'arguments']], 1)).toEqual([
      { start: 23, end: 36 },
    ])
  })

  it('reads a 1 MiB body in one pass without building it', () => {
    const args = { value: new Array(400_000).fill(0), text: 'x'.repeat(200_000) }
    const text = JSON.stringify({
      method: 'tools/call',
      params: { arguments: args, _meta: { 'x402/payment': { a: 1 } } },
    })
    expect(text.length).toBeGreaterThan(1_000_000)
    expect(located(text)[2]).toBe('{"a":1}')
  })
})
