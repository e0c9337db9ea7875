import { describe, expect, it } from 'vitest'
import { formatUsdc, money, toBigInt, toCount } from './money.js'

describe('formatUsdc', () => {
  it.each([
    [0n, '0'],
    [1n, '0.000001'],
    [3000n, '0.003'],
    [10_000n, '0.01'],
    [1_000_000n, '1'],
    [1_500_000n, '1.5'],
    [123_456_789n, '123.456789'],
    [2n ** 63n - 1n, '9223372036854.775807'],
  ])('%s atomic units are %s USDC', (atomic, usdc) => {
    expect(formatUsdc(atomic)).toBe(usdc)
  })

  it('pairs both notations', () => {
    expect(money(3000n)).toEqual({ atomic: '3000', usdc: '0.003' })
  })
})

describe('toBigInt', () => {
  it('reads every form a driver returns without rounding', () => {
    expect(toBigInt(9007199254740993n)).toBe(9007199254740993n)
    expect(toBigInt('9223372036854775807')).toBe(9223372036854775807n)
    expect(toBigInt(42)).toBe(42n)
    expect(toBigInt(null)).toBe(0n)
    expect(toCount('17')).toBe(17)
  })

  it('rejects what is not an integer', () => {
    expect(() => toBigInt(1.5)).toThrow(TypeError)
    expect(() => toBigInt('1e3')).toThrow(TypeError)
    expect(() => toBigInt(2 ** 53)).toThrow(TypeError)
  })
})
