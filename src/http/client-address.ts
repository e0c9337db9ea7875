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
 * Either way an IPv6 address that stands for an IPv4 client is that IPv4 address
 * ({@link embeddedIPv4}), so that one IPv4 client is one client however its address is spelt.
 *
 * @param socketAddress - the peer address of the TCP connection; undefined when unknown (an
 *   in-process `app.request()`), which yields `'unknown'`
 * @param forwardedFor - the `X-Forwarded-For` header as received
 * @param trustProxyHops - proxies in front of the service that append to `X-Forwarded-For`
 *   (TRUST_PROXY_HOPS)
 * @returns the client address: IPv4 in dotted decimal (an IPv4-mapped or NAT64 address too), any
 *   other IPv6 address as given
 *
 * @example
 * clientAddress('127.0.0.1', '203.0.113.9, 198.51.100.7', 1) // '198.51.100.7'
 * clientAddress('127.0.0.1', '203.0.113.9', 0) // '127.0.0.1'
 * clientAddress('127.0.0.1', undefined, 1) // '127.0.0.1'
 * clientAddress('::1', '::ffff:c612:1', 1) // '198.18.0.1'
 */
export function clientAddress(
  socketAddress: string | undefined,
  forwardedFor: string | undefined,
  trustProxyHops: number,
): string {
  const socket = socketAddress ? (ipAddress(socketAddress) ?? socketAddress) : 'unknown'
  if (trustProxyHops <= 0 || forwardedFor === undefined) return socket
  const entries = forwardedFor.split(',')
  if (entries.length < trustProxyHops) return socket
  return ipAddress((entries[entries.length - trustProxyHops] as string).trim()) ?? socket
}

/**
 * An IP address as {@link clientAddress} returns it: IPv4 as it is (Node's strict dotted
 * decimal), an IPv6 address standing for an IPv4 one as that IPv4 address, any other IPv6 address
 * as given; undefined for text that is not an IP address.
 */
function ipAddress(text: string): string | undefined {
  if (isIPv4(text)) return text
  if (!isIPv6(text)) return undefined
  return embeddedIPv4(ipaddr.IPv6.parse(text)) ?? text
}

/** The well-known NAT64 prefix, `64:ff9b::/96` (RFC 6052 2.1). */
const NAT64_WELL_KNOWN = ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number]
/** IPv4-compatible addresses, `::/96` (RFC 4291 2.5.5.1, deprecated), `::` and `::1` among them. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96') as [ipaddr.IPv6, number]

/**
 * The IPv4 address an IPv6 address stands for, when it is:
 * - IPv4-mapped, `::ffff:0:0/96` (RFC 4291 2.5.5.2): how a dual-stack socket or proxy writes an
 *   IPv4 peer, in any spelling (`::ffff:198.18.0.1`, `::ffff:c612:1`, `0:0:0:0:0:ffff:c612:1`,
 *   upper case, with a zone);
 * - in the well-known NAT64 prefix `64:ff9b::/96` (RFC 6052 2.1): how a stateless translator in
 *   front of an IPv6-only service writes an IPv4 client. The prefix is never routed on the
 *   Internet, so only a translator on the service's own path can give such an address; counted
 *   by /64, every IPv4 client behind it would share one bucket;
 * - IPv4-compatible, `::/96` but `::` and `::1` (RFC 4291 2.5.5.1, deprecated, and never a peer's
 *   address today): ipaddr.js reads its dotted spelling `::198.18.0.1` as IPv4-mapped, so its hex
 *   spelling `::c612:1` is read so too, one address being one client.
 *
 * Other IPv6 addresses with an IPv4 address inside (6to4, Teredo, a network-specific NAT64
 * prefix) are IPv6 addresses the client holds: they are counted by /64.
 */
function embeddedIPv4(address: ipaddr.IPv6): string | undefined {
  if (address.isIPv4MappedAddress()) return address.toIPv4Address().toString()
  const compatible =
    address.match(IPV4_COMPATIBLE) &&
    address.range() !== 'unspecified' &&
    address.range() !== 'loopback'
  if (compatible || address.match(NAT64_WELL_KNOWN)) {
    return ipaddr.fromByteArray(address.toByteArray().slice(12)).toString()
  }
  return undefined
}

/**
 * The rate-limit bucket of a client address: an IPv4 address as it is; an IPv6 address that
 * stands for an IPv4 one (IPv4-mapped, NAT64 `64:ff9b::/96`) as that IPv4 address; any other IPv6
 * address by its /64 prefix (the first four groups, lower-case hexadecimal without leading
 * zeros), because one subscriber is usually given a whole /64 and could otherwise rotate through
 * 2^64 addresses.
 *
 * @example
 * clientBucket('2001:DB8:0:0:1::5') // '2001:db8:0:0::/64'
 * clientBucket('2001:db8::1') // '2001:db8:0:0::/64'
 * clientBucket('198.51.100.7') // '198.51.100.7'
 * clientBucket('::FFFF:C612:1') // '198.18.0.1'
 */
export function clientBucket(address: string): string {
  if (!isIPv6(address)) return address
  // ipaddr.js parses every spelling: `::` expansion, an embedded IPv4 tail, a zone (`%eth0`).
  const parsed = ipaddr.IPv6.parse(address)
  return (
    embeddedIPv4(parsed) ??
    `${parsed.parts
      .slice(0, 4)
      .map((group) => group.toString(16))
      .join(':')}::/64`
  )
}
