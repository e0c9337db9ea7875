import { isIPv4, isIPv6 } from 'node:net'
import ipaddr from 'ipaddr.js'

/**
 * The address of the client that sent a request, as far as this instance can trust it:
 *
 * - `trustProxyHops` 0 (the default): the socket's peer address. `X-Forwarded-For` is ignored,
 *   since any client can send one;
 * - `trustProxyHops` n > 0: the n-th entry from the right of `X-Forwarded-For` (all its lines
 *   joined by commas, entries trimmed). Each trusted proxy appends the address it received the
 *   request from, so with the shipped nginx alone (n = 1) the last entry is the client's, and
 *   whatever the client wrote itself is to its left and never read.
 *
 * When the header is missing, has fewer than n entries, or its n-th entry from the right is not an
 * IP address, the request did not come through the n proxies as configured (or a proxy is
 * misconfigured): the socket address is used, never a leftmost entry, because every entry
 * beyond the trusted ones can be written by the client. Behind a proxy this puts such requests
 * in the proxy's bucket, which over-limits rather than lets a client pick its own identity.
 *
 * @param socketAddress - the peer address of the TCP connection; undefined when unknown (an
 *   in-process `app.request()`), which yields `'unknown'`
 * @param forwardedFor - the `X-Forwarded-For` header as received
 * @param trustProxyHops - proxies in front of the service that append to `X-Forwarded-For`
 *   (TRUST_PROXY_HOPS)
 * @returns the client address; IPv4-mapped IPv6 addresses (`::ffff:192.0.2.1`) as plain IPv4
 *
 * @example
 * clientAddress('127.0.0.1', '203.0.113.9, 198.51.100.7', 1) // '198.51.100.7'
 * clientAddress('127.0.0.1', '203.0.113.9', 0) // '127.0.0.1'
 * clientAddress('127.0.0.1', undefined, 1) // '127.0.0.1'
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trustProxyHops: number,
): string {
  const socket = socketAddress ? unmapIPv4(socketAddress) : 'unknown'
  if (trustProxyHops <= 0 || forwardedFor === undefined) return socket
  const entries = forwardedFor.split(',')
  if (entries.length < trustProxyHops) return socket
  const entry = unmapIPv4((entries[entries.length - trustProxyHops] as string).trim())
  return isIPv4(entry) || isIPv6(entry) ? entry : socket
}

/** `::ffff:192.0.2.1` -> `192.0.2.1`; any other text as it is. */
function unmapIPv4(address: string): string {
  if (address.length > 7 && address.slice(0, 7).toLowerCase() === '::ffff:') {
    const v4 = address.slice(7)
    if (isIPv4(v4)) return v4
  }
  return address
}

/**
 * The rate-limit bucket of a client address: an IPv4 address as it is; an IPv6 address by its
 * /64 prefix (the first four groups, lower-case hexadecimal without leading zeros), because one
 * subscriber is usually given a whole /64 and could otherwise rotate through 2^64 addresses.
 *
 * @example
 * clientBucket('2001:DB8:0:0:1::5') // '2001:db8:0:0::/64'
 * clientBucket('2001:db8::1') // '2001:db8:0:0::/64'
 * clientBucket('198.51.100.7') // '198.51.100.7'
 */
export function clientBucket(address: string): string {
  if (!isIPv6(address)) return address
  return `${ipv6Groups(address).slice(0, 4).join(':')}::/64`
}

/**
 * The eight 16-bit groups of a valid IPv6 address, as lower-case hex without leading zeros.
 * ipaddr.js parses it (`::` expansion, an embedded IPv4 tail, a zone such as `%eth0`).
 */
function ipv6Groups(address: string): string[] {
  return ipaddr.IPv6.parse(address).parts.map((group) => group.toString(16))
}
