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

  it('unmaps IPv4-mapped addresses in every spelling, from X-Forwarded-For and from the socket', () => {
    const spellings = [
      '::ffff:198.18.0.1',
      '::ffff:c612:1',
      '::FFFF:C612:1',
      '::ffff:c612:0001',
      '0:0:0:0:0:ffff:c612:1',
      '0000:0000:0000:0000:0000:FFFF:C612:0001',
      '0:0::ffff:198.18.0.1',
      '0000:0000:0000:0000:0000:ffff:198.18.0.1',
      '::ffff:c612:1%eth0',
      '::ffff:198.18.0.1%1',
    ]
    for (const spelling of spellings) {
      expect(clientAddress('127.0.0.1', `203.0.113.9, ${spelling}`, 1), spelling).toBe('198.18.0.1')
      expect(clientAddress(spelling, undefined, 0), spelling).toBe('198.18.0.1')
      expect(clientAddress(spelling, '203.0.113.9', 1), spelling).toBe('203.0.113.9')
    }
    // A socket in the mapped form with a header that is not an address: the socket's IPv4.
    expect(clientAddress('::ffff:c612:1', 'unknown', 1)).toBe('198.18.0.1')
  })

  it('unmaps the well-known NAT64 prefix 64:ff9b::/96 (RFC 6052): each IPv4 client behind a translator is its own client', () => {
    expect(clientAddress('::1', '64:ff9b::198.18.0.1', 1)).toBe('198.18.0.1')
    expect(clientAddress('::1', '64:FF9B::C612:1', 1)).toBe('198.18.0.1')
    expect(clientAddress('::1', '64:ff9b:0:0:0:0:c612:2', 1)).toBe('198.18.0.2')
    expect(clientAddress('64:ff9b::cb00:7109', undefined, 0)).toBe('203.0.113.9')
    // Outside the /96 (a network-specific prefix, RFC 8215's 64:ff9b:1::/48): an IPv6 address.
    expect(clientAddress('::1', '64:ff9b:1::c612:1', 1)).toBe('64:ff9b:1::c612:1')
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
    expect(clientBucket('64:ff9b:1::192.0.2.1')).toBe('64:ff9b:1:0::/64')
    expect(clientBucket('1:2:3:4:5:6:7:8')).toBe('1:2:3:4::/64')
  })

  it('puts an IPv4 client in the bucket of its IPv4 address however its address is spelt', () => {
    const spellings = [
      '198.18.0.1',
      '::ffff:198.18.0.1',
      '::ffff:c612:1',
      '::FFFF:C612:1',
      '0:0:0:0:0:ffff:c612:1',
      '0000:0000:0000:0000:0000:FFFF:C612:0001',
      '::ffff:c612:1%eth0',
      '64:ff9b::198.18.0.1',
      '64:ff9b::c612:1',
    ]
    for (const spelling of spellings) {
      expect(clientBucket(spelling), spelling).toBe('198.18.0.1')
      expect(clientBucket(clientAddress('::1', spelling, 1)), spelling).toBe('198.18.0.1')
    }
    // The deprecated IPv4-compatible form: ipaddr.js reads `::198.18.0.1` as mapped; its hex
    // spelling is the same address.
    expect(clientBucket('::198.18.0.1')).toBe('198.18.0.1')
    expect(clientBucket('::c612:1')).toBe('198.18.0.1')
    expect(clientBucket('::1')).toBe('0:0:0:0::/64')
    expect(clientBucket('::')).toBe('0:0:0:0::/64')
    // IPv6 addresses a client holds: the IPv4-translated form (::ffff:0:0:0/96), 6to4, Teredo.
    expect(clientBucket('::ffff:0:c612:1')).toBe('0:0:0:0::/64')
    expect(clientBucket('2002:c612:1::1')).toBe('2002:c612:1:0::/64')
    expect(clientBucket('2001:0:4136:e378:8000:63bf:3fff:fdd2')).toBe('2001:0:4136:e378::/64')
  })
})
