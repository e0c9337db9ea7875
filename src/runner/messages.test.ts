import { describe, expect, it } from 'vitest'
import { MESSAGE_BOUNDS, readMessages } from './messages.js'

const utf8 = (text: string) => new TextEncoder().encode(text)
const call = (id: number, args: unknown, meta?: unknown) => ({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: { name: 'payload_hash', arguments: args, ...(meta ? { _meta: meta } : {}) },
})

describe('readMessages', () => {
  it('gives a message or a batch back with every arguments object emptied, whatever it held', () => {
    const big = { input: 'x'.repeat(200_000), nested: [[[[[[{ a: 1 }]]]]]] }
    const payment = { 'x402/payment': { x402Version: 2, accepted: { amount: '1000' } } }
    expect(readMessages(utf8(JSON.stringify(call(1, big, payment))))).toEqual({
      status: 'ok',
      count: 1,
      json: JSON.stringify(call(1, {}, payment)),
    })
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list' }
    expect(readMessages(utf8(JSON.stringify([list, call(3, big)])))).toEqual({
      status: 'ok',
      count: 2,
      json: JSON.stringify([list, call(3, {})]),
    })
  })

  it('leaves arguments that are not an object to the protocol layer, within the bounds', () => {
    expect(readMessages(utf8(JSON.stringify(call(1, 'text'))))).toMatchObject({
      status: 'ok',
      json: JSON.stringify(call(1, 'text')),
    })
  })

  it('refuses a body out of bounds outside the arguments: wide _meta, deep params, long batches', () => {
    const wide = Object.fromEntries(Array.from({ length: 90_000 }, (_, i) => [`k${i}`, 0]))
    expect(readMessages(utf8(JSON.stringify(call(1, {}, wide))))).toEqual({
      status: 'out_of_bounds',
      message: `The JSON-RPC body is out of bounds (tool arguments aside): an object or array holds more than ${MESSAGE_BOUNDS.members} members`,
    })
    const deep = `${'['.repeat(100_000)}0${']'.repeat(100_000)}`
    const text = JSON.stringify(call(1, {}, { deep: 'DEEP' })).replace('"DEEP"', deep)
    expect(readMessages(utf8(text))).toMatchObject({
      status: 'out_of_bounds',
      message: `The JSON-RPC body is out of bounds (tool arguments aside): it is nested more than ${MESSAGE_BOUNDS.depth} levels deep`,
    })
    const batch = Array.from({ length: 100 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'ping' }))
    expect(readMessages(utf8(JSON.stringify(batch)))).toEqual({
      status: 'out_of_bounds',
      message: `The JSON-RPC batch holds more than ${MESSAGE_BOUNDS.members} messages`,
    })
  })

  it('says a body is not JSON without quoting it', () => {
    expect(readMessages(utf8('{"jsonrpc":'))).toMatchObject({ status: 'invalid_json' })
  })
})
