import { describe, expect, it } from 'vitest'
import { readMessages } from '../runner/messages.js'
import { MAX_ENVELOPE_BYTES, readPaidEnvelope } from './envelope.js'

const utf8 = (text: string) => new TextEncoder().encode(text)
const payment = { x402Version: 2, accepted: { amount: '1000' }, payload: { signature: '0x"}' } }
const call = (params: Record<string, unknown>) => ({
  jsonrpc: '2.0',
  id: 7,
  method: 'tools/call',
  params: { name: 'payload_hash', ...params },
})

describe('readPaidEnvelope', () => {
  it('reads a paid tools/call as the whole body would be read, arguments aside, wherever its members lie', () => {
    const args = { input: 'x'.repeat(900_000), note: '"_meta":{"x402/payment":1}', deep: [[[{}]]] }
    for (const body of [
      call({ arguments: args, _meta: { progressToken: 1, 'x402/payment': payment } }),
      call({ _meta: { 'x402/payment': payment }, arguments: args }),
      { params: { _meta: { 'x402/payment': payment }, name: 'h' }, method: 'tools/call', id: 'a' },
    ]) {
      const bytes = utf8(JSON.stringify(body, null, body.id === 'a' ? 2 : undefined))
      const envelope = readPaidEnvelope(bytes)
      expect(envelope).toEqual(readMessages(bytes))
      expect(envelope).toMatchObject({ status: 'ok', count: 1 })
    }
  })

  it('has none for a body that is not one tools/call with a payment at params._meta["x402/payment"]', () => {
    const meta = { 'x402/payment': payment }
    const none = [
      call({ arguments: { text: 'x402/payment', _meta: meta } }),
      call({ arguments: {}, name: 'x402/payment' }),
      call({ arguments: {}, extra: { _meta: meta } }),
      { ...call({ arguments: {}, _meta: meta }), method: 'tools/list' },
      [call({ arguments: {}, _meta: meta })],
      call({ arguments: 'a string', _meta: meta }),
      call({
        arguments: {},
        _meta: { 'x402/payment': payment },
        x: 'x'.repeat(MAX_ENVELOPE_BYTES),
      }),
    ].map((body) => utf8(JSON.stringify(body)))
    none.push(utf8(JSON.stringify(call({ _meta: meta })).replace('"_meta"', '"_m\\u0065ta"')))
    none.push(utf8(`${JSON.stringify(call({ _meta: meta })).slice(0, -1)}`))
    for (const body of none) expect(readPaidEnvelope(body)).toBeUndefined()
  })

  it('refuses an envelope out of bounds as a checker thread would refuse the whole body', () => {
    const deep = JSON.parse(`${'['.repeat(50)}${']'.repeat(50)}`)
    const args = { input: 'x'.repeat(100_000) }
    const body = utf8(JSON.stringify(call({ arguments: args, _meta: { 'x402/payment': deep } })))
    expect(readPaidEnvelope(body)).toEqual(readMessages(body))
    expect(readPaidEnvelope(body)).toEqual({
      status: 'out_of_bounds',
      message:
        'The JSON-RPC body is out of bounds (tool arguments aside): it is nested more than 40 levels deep',
    })
    // Wider than the bounds along the way: none (the free lane's refusal stands).
    const wide = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]))
    const meta = { ...wide, 'x402/payment': 1 }
    expect(readPaidEnvelope(utf8(JSON.stringify(call({ arguments: {}, _meta: meta }))))).toBe(
      undefined,
    )
  })
})
