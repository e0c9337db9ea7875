import type { PaymentRequirements } from '@x402/core/types'
import { describe, expect, it } from 'vitest'
import { BASE_REQUIREMENTS, SOLANA_REQUIREMENTS } from '../../test/helpers/requirements.js'
import {
  CLOCK_SKEW_SECONDS,
  checkPayloadFor,
  checkPaymentShape,
  matchOffer,
  type ShapedPayment,
  SOLANA_TRANSACTION_LIFETIME_SECONDS,
} from './payment-shape.js'

// The payment's bounds and shape are checked by our own code before any SDK function sees it
// (issue 27: the SDK's matching took 15 s on one header nested 3,000 deep).

const evm = BASE_REQUIREMENTS
const solana = SOLANA_REQUIREMENTS
const NOW = 1_795_000_000
const authorization = {
  from: '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B',
  to: evm.payTo,
  value: '1000',
  validAfter: '0',
  validBefore: String(NOW + 60),
  nonce: `0x${'f3'.repeat(32)}`,
}
const evmPayment = {
  x402Version: 2,
  resource: { url: 'https://tools.example/hash', mimeType: 'application/json' },
  accepted: evm,
  payload: { authorization, signature: `0x${'ab'.repeat(65)}` },
  extensions: { 'payment-identifier': { info: { required: false } } },
}
const svmPayment = { x402Version: 2, accepted: solana, payload: { transaction: 'AQID' } }

const problemOf = (value: unknown) => (checkPaymentShape(value) as { problem?: string }).problem
const prefix = 'The payment is not a valid x402 v2 PaymentPayload of scheme exact: '

describe('checkPaymentShape', () => {
  it('lets through the official shapes of both rails, as they are', () => {
    expect(checkPaymentShape(evmPayment)).toEqual({ payment: evmPayment })
    expect(checkPaymentShape(svmPayment)).toEqual({ payment: svmPayment })
  })

  it('refuses members it does not know, at every level but the extensions', () => {
    expect(problemOf({ ...evmPayment, more: 1 })).toBe(`${prefix}Unrecognized key: "more"`)
    expect(problemOf({ ...evmPayment, accepted: { ...evm, junk: [[['x']]] } })).toBe(
      `${prefix}Unrecognized key: "junk" at accepted`,
    )
    expect(
      problemOf({
        ...evmPayment,
        payload: { ...evmPayment.payload, authorization: { ...authorization, memo: 'x' } },
      }),
    ).toBe(`${prefix}Unrecognized key: "memo" at payload.authorization`)
    expect(problemOf({ ...svmPayment, payload: { transaction: 'AQID', more: true } })).toBe(
      `${prefix}Unrecognized key: "more" at payload`,
    )
  })

  it('takes the payload of the scheme the network names: an authorization on EVM, a transaction on Solana', () => {
    expect(problemOf({ ...evmPayment, payload: { transaction: 'AQID' } })).toMatch(
      /^The payment is not a valid x402 v2 PaymentPayload of scheme exact: .* at payload/,
    )
    expect(problemOf({ ...svmPayment, payload: evmPayment.payload })).toBe(
      `${prefix}Invalid input: expected string, received undefined at payload.transaction`,
    )
  })

  it('refuses amounts and times that are not decimal digits, and malformed hex, before any facilitator sees them', () => {
    const withAuthorization = (change: Record<string, unknown>) => ({
      ...evmPayment,
      payload: { ...evmPayment.payload, authorization: { ...authorization, ...change } },
    })
    for (const [field, value] of [
      ['value', 'x'],
      ['value', '-1'],
      ['value', '1e3'],
      ['value', '01000'],
      ['validBefore', '0x10'],
      ['validAfter', 1],
    ] as const) {
      expect(problemOf(withAuthorization({ [field]: value }))).toMatch(
        new RegExp(`at payload\\.authorization\\.${field}$`),
      )
    }
    expect(problemOf(withAuthorization({ nonce: '0x1234' }))).toBe(
      `${prefix}expected 0x and 32 bytes in hex at payload.authorization.nonce`,
    )
    expect(problemOf(withAuthorization({ from: 'alice' }))).toBe(
      `${prefix}expected 0x and 20 bytes in hex at payload.authorization.from`,
    )
    expect(problemOf({ ...evmPayment, accepted: { ...evm, amount: '1000.0' } })).toBe(
      `${prefix}expected an unsigned integer in decimal digits at accepted.amount`,
    )
    expect(problemOf({ ...evmPayment, x402Version: 1 })).toBe(
      `${prefix}Invalid input: expected 2 at x402Version`,
    )
  })

  it('refuses a value out of its bounds before its shape is read', () => {
    let deep: unknown = 'x'.repeat(8000)
    for (let i = 0; i < 3000; i++) deep = [deep]
    expect(problemOf({ ...evmPayment, accepted: { ...evm, extra: { ...evm.extra, deep } } })).toBe(
      'The payment is out of bounds: it is nested more than 32 levels deep',
    )
    const wide = Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, i]))
    expect(problemOf({ ...evmPayment, extensions: wide })).toBe(
      'The payment is out of bounds: an object or array holds more than 64 members',
    )
    expect(problemOf(null)).toBe(`${prefix}Invalid input: expected object, received null`)
  })
})

describe('matchOffer', () => {
  const offers = [evm, solana]

  it('matches the offer a payment names, every field equal', () => {
    expect(matchOffer(offers, { ...evm })).toEqual({ matched: evm })
    expect(matchOffer(offers, { ...solana, extra: { ...solana.extra } })).toEqual({
      matched: solana,
    })
  })

  it('names the first field that departs from the offer, extra members included', () => {
    const problem = (change: Partial<PaymentRequirements>) =>
      (matchOffer(offers, { ...evm, ...change }) as { problem: string }).problem
    expect(problem({ amount: '999' })).toBe(
      'amount "999" is not the offered "1000" for exact on eip155:8453',
    )
    expect(problem({ maxTimeoutSeconds: 3600 })).toBe(
      'maxTimeoutSeconds 3600 is not the offered 60 for exact on eip155:8453',
    )
    expect(problem({ extra: { name: 'USD Coin' } })).toBe(
      'extra.version is not the offered one for exact on eip155:8453',
    )
    expect(problem({ extra: { ...evm.extra, junk: 'x' } })).toBe(
      'extra.junk is not the offered one for exact on eip155:8453',
    )
  })
})

describe('checkPayloadFor', () => {
  const shaped = (change: Partial<typeof authorization>) =>
    ({
      ...evmPayment,
      payload: { ...evmPayment.payload, authorization: { ...authorization, ...change } },
    }) as unknown as ShapedPayment
  const problemFor = (change: Partial<typeof authorization>) =>
    (checkPayloadFor(shaped(change), evm, NOW) as { problem?: string }).problem

  it('gives when the payment stops being presentable: validBefore on EVM, the transaction lifetime on Solana', () => {
    expect(checkPayloadFor(shaped({}), evm, NOW)).toEqual({ validUntil: NOW + 60 })
    expect(checkPayloadFor(svmPayment as unknown as ShapedPayment, solana, NOW)).toEqual({
      validUntil: NOW + SOLANA_TRANSACTION_LIFETIME_SECONDS,
    })
  })

  it('refuses an authorization of another amount or payee', () => {
    expect(problemFor({ value: '1' })).toBe('authorization.value "1" is not the price "1000"')
    expect(problemFor({ to: authorization.from })).toBe('authorization.to is not the offered payTo')
    expect(problemFor({ to: evm.payTo.toLowerCase() })).toBeUndefined()
  })

  it('refuses an authorization valid for longer than the offer allows, expired, or not valid yet', () => {
    const longest = NOW + evm.maxTimeoutSeconds + CLOCK_SKEW_SECONDS
    expect(problemFor({ validBefore: String(longest) })).toBeUndefined()
    expect(problemFor({ validBefore: String(longest + 1) })).toBe(
      `the authorization is valid for ${longest + 1 - NOW} s; the offer allows at most 60 s (maxTimeoutSeconds)`,
    )
    expect(problemFor({ validBefore: String(NOW + 365 * 86400) })).toMatch(
      /^the authorization is valid for 31536000 s/,
    )
    expect(problemFor({ validBefore: String(NOW) })).toBe(
      'the authorization has expired (validBefore)',
    )
    expect(problemFor({ validAfter: String(NOW + CLOCK_SKEW_SECONDS + 1) })).toBe(
      'the authorization is not valid yet (validAfter)',
    )
  })

  it('refuses a payload of the other rail', () => {
    expect(
      (checkPayloadFor(svmPayment as unknown as ShapedPayment, evm, NOW) as { problem: string })
        .problem,
    ).toBe('an EVM payment carries an EIP-3009 authorization, not a transaction')
    expect((checkPayloadFor(shaped({}), solana, NOW) as { problem: string }).problem).toBe(
      'a Solana payment carries a transaction, not an authorization',
    )
  })
})
