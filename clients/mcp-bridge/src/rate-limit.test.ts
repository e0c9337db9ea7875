import { describe, expect, it } from 'vitest'
import { parseRetryAfter } from './rate-limit.js'

// Against a scripted service over HTTP: rate-limit.e2e.test.ts.

describe('parseRetryAfter', () => {
  it('reads delay-seconds and HTTP-dates (RFC 9110 section 10.2.3)', () => {
    const now = new Date('2015-10-21T07:28:00Z')
    expect(parseRetryAfter('5', now)).toBe(5)
    expect(parseRetryAfter(' 0 ', now)).toBe(0)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:05 GMT', now)).toBe(5)
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:27:00 GMT', now)).toBe(0)
  })

  it('gives undefined for an absent or malformed header', () => {
    expect(parseRetryAfter(null)).toBeUndefined()
    expect(parseRetryAfter('')).toBeUndefined()
    expect(parseRetryAfter('-1')).toBeUndefined()
    expect(parseRetryAfter('1.5')).toBeUndefined()
    expect(parseRetryAfter('soon')).toBeUndefined()
  })
})
