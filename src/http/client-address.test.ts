import { describe, expect, it } from 'vitest'
import { clientAddress, clientBucket } from './client-address.js'

describe('clientAddress', () => {
  it('is the socket address when no proxy is trusted, whatever X-Forwarded-For says', () => {
    expect(clientAddress('198.51.100.7', undefined, 0)).toBe('198.51.100.7')
    expect(clientAddress('198.51.100.7', '203.0.113.9', 0)).toBe('198.51.100.7')
  })

  it('takes the entry `hops` from the right, trimmed', () => {
    expect(clientAddress('127.0.0.1', '203.0.113.9', 1)).toBe('203.0.113.9')
    expect(clientAddress('127.0.0.1', ' 1.1.1.1 ,203.0.113.9 ,  198.51.100.7 ', 1)).toBe(
      '198.51.100.7',
    )
    expect(clientAddress('127.0.0.1', '1.1.1.1, 203.0.113.9, 198.51.100.7', 2)).toBe('203.0.113.9')
    expect(clientAddress('127.0.0.1', '1.1.1.1, 203.0.113.9, 198.51.100.7', 3)).toBe('1.1.1.1')
  })

  it('ignores what a client prepends: only the entries the trusted proxies appended count', () => {
    // The client sent "X-Forwarded-For: 6.6.6.6"; nginx appended the address it saw.
    expect(clientAddress('127.0.0.1', '6.6.6.6, 203.0.113.9', 1)).toBe('203.0.113.9')
  })

  it('falls back to the socket address without the header, with fewer entries than hops, or a non-address', () => {
    expect(clientAddress('127.0.0.1', undefined, 1)).toBe('127.0.0.1')
    expect(clientAddress('127.0.0.1', '', 1)).toBe('127.0.0.1')
    expect(clientAddress('127.0.0.1', '203.0.113.9', 2)).toBe('127.0.0.1')
    expect(clientAddress('127.0.0.1', 'unknown', 1)).toBe('127.0.0.1')
    expect(clientAddress('127.0.0.1', '203.0.113.9, ', 1)).toBe('127.0.0.1')
    expect(clientAddress('127.0.0.1', '203.0.113.9:4711', 1)).toBe('127.0.0.1')
    expect(clientAddress('127.0.0.1', '[2001:db8::1]', 1)).toBe('127.0.0.1')
  })

  it('reads IPv6 entries and IPv4-mapped IPv6 addresses', () => {
    expect(clientAddress('::1', '2001:db8::1', 1)).toBe('2001:db8::1')
    expect(clientAddress('::1', '1.1.1.1, 2001:DB8::1', 1)).toBe('2001:DB8::1')
    expect(clientAddress('::ffff:198.51.100.7', undefined, 0)).toBe('198.51.100.7')
    expect(clientAddress('::1', '::FFFF:203.0.113.9', 1)).toBe('203.0.113.9')
  })

  it('is "unknown" without a socket address (an in-process request)', () => {
    expect(clientAddress(undefined, undefined, 0)).toBe('unknown')
    expect(clientAddress(undefined, '203.0.113.9', 1)).toBe('203.0.113.9')
  })
})

describe('clientBucket', () => {
  it('keeps IPv4 addresses and the fallback as they are', () => {
    expect(clientBucket('198.51.100.7')).toBe('198.51.100.7')
    expect(clientBucket('unknown')).toBe('unknown')
  })

  it('groups IPv6 addresses by /64, in one canonical spelling', () => {
    const bucket = '2001:db8:0:0::/64'
    expect(clientBucket('2001:db8::1')).toBe(bucket)
    expect(clientBucket('2001:DB8:0000:0000:ffff:1:2:3')).toBe(bucket)
    expect(clientBucket('2001:db8::1:2:3:4')).toBe(bucket)
    expect(clientBucket('2001:db8:0:1::1')).toBe('2001:db8:0:1::/64')
    expect(clientBucket('::1')).toBe('0:0:0:0::/64')
    expect(clientBucket('fe80::1%eth0')).toBe('fe80:0:0:0::/64')
    expect(clientBucket('64:ff9b::192.0.2.1')).toBe('64:ff9b:0:0::/64')
    expect(clientBucket('1:2:3:4:5:6:7:8')).toBe('1:2:3:4::/64')
  })
})
