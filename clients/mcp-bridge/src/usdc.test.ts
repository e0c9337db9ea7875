import { describe, expect, it } from 'vitest'
import { formatUsdc, parseAtomic, parseUsdc } from './usdc.js'

describe('parseUsdc', () => {
  it.each([
    ['0.01', 10_000n],
    ['0.10', 100_000n],
    ['0.002', 2_000n],
    ['0.000001', 1n],
    ['1', 1_000_000n],
    ['12.5', 12_500_000n],
    [' 0.003 ', 3_000n],
    ['0', 0n],
    ['123456789.123456', 123_456_789_123_456n],
  ])('%j -> %d atomic units', (text, atomic) => {
    expect(parseUsdc(text)).toBe(atomic)
  })

  it('is exact where binary floating point is not (0.1 + 0.2)', () => {
    expect(parseUsdc('0.1') + parseUsdc('0.2')).toBe(parseUsdc('0.3'))
  })

  it.each(['', '.5', '1.', '-1', '1e-3', '0.0000001', '1,5', 'abc', '0x10', '+1', '1 000'])(
    'refuses %j',
    (text) => {
      expect(() => parseUsdc(text)).toThrow(RangeError)
    },
  )
})

describe('parseAtomic', () => {
  it('reads non-negative integer strings only', () => {
    expect(parseAtomic('1000')).toBe(1000n)
    expect(parseAtomic('0')).toBe(0n)
    expect(parseAtomic('99999999999999999999')).toBe(99_999_999_999_999_999_999n)
    for (const bad of ['1.5', '-1', '', ' 1', '1e3', 1000, null, undefined]) {
      expect(parseAtomic(bad)).toBeUndefined()
    }
  })
})

describe('formatUsdc', () => {
  it.each([
    [0n, '0'],
    [1n, '0.000001'],
    [1_000n, '0.001'],
    [10_000n, '0.01'],
    [100_000n, '0.1'],
    [2_000_000n, '2'],
    [12_500_000n, '12.5'],
    [-3_000n, '-0.003'],
  ])('%d -> %j', (atomic, text) => {
    expect(formatUsdc(atomic)).toBe(text)
  })

  it('round-trips with parseUsdc', () => {
    for (const atomic of [0n, 1n, 999n, 1_000n, 123_456_789n]) {
      expect(parseUsdc(formatUsdc(atomic))).toBe(atomic)
    }
  })
})
