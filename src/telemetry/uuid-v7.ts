import { createHash, randomUUID } from 'node:crypto'

/**
 * A UUID version 7 (RFC 9562, section 5.7): the 48-bit Unix time in milliseconds, then random
 * bits. Ids made later sort after earlier ones (within one millisecond their order is random), so
 * rows keyed by them append to an index instead of landing on random pages.
 *
 * Our own because the `uuid` package's `v7()` draws fresh random bytes on every call, where
 * `crypto.randomUUID()` serves from a cached entropy pool, and one id is made per paid event on the
 * serving thread. This takes a version-4 UUID from `randomUUID()` and replaces its first 48 bits
 * and its version nibble, keeping 74 random bits and the RFC 9562 variant.
 *
 * @example
 * uuidV7(Date.UTC(2025, 5, 15)) // '019770e2-c800-7…-…' (the time prefix is the input, in hex)
 * @param now - epoch milliseconds, 0 to 2^48 - 1
 */
export function uuidV7(now: number = Date.now()): string {
  const random = randomUUID()
  const time = now.toString(16).padStart(12, '0')
  return `${time.slice(0, 8)}-${time.slice(8, 12)}-7${random.slice(15)}`
}

/**
 * A UUID version 8 (RFC 9562, section 5.8) made from SHA-256 of `name`: the same name gives the
 * same id, so an event recorded twice under it (a crash between its insert and the ledger write
 * that follows) is stored once.
 *
 * @example uuidOfName('settlement:pay:5f1c…:settled') // '3b0e…-…-8…-…-…'
 */
export function uuidOfName(name: string): string {
  const h = createHash('sha256').update(name).digest('hex')
  const variant = ((Number.parseInt(h.slice(16, 17), 16) & 0x3) | 0x8).toString(16)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-8${h.slice(13, 16)}-${variant}${h.slice(17, 20)}-${h.slice(20, 32)}`
}
