import { createHash } from 'node:crypto'

/** Bytes of the SHA-256 that leads a {@link frame}. */
export const DIGEST_BYTES = 32

/**
 * JSON bytes with the SHA-256 of a canonical form, as one buffer: the 32-byte digest, then the
 * bytes. A worker returns a checked input or a result this way because piscina moves (transfers
 * without a copy) only a top-level buffer, not one inside an object.
 *
 * @param json - UTF-8 JSON
 * @param canonical - the text whose SHA-256 leads the frame (the RFC 8785 form of the value)
 * @example frame(utf8('{"b":1,"a":2}'), '{"a":2,"b":1}') // <32 bytes of SHA-256> + the JSON
 */
export function frame(json: Uint8Array, canonical: string | Uint8Array): Uint8Array {
  const framed = new Uint8Array(DIGEST_BYTES + json.length)
  framed.set(createHash('sha256').update(canonical).digest(), 0)
  framed.set(json, DIGEST_BYTES)
  return framed
}

/**
 * The parts of a {@link frame}: the JSON (a view on the same memory, not a copy) and the digest as
 * lower-case hex.
 *
 * @example unframe(framed) // { bytes: <the JSON>, digest: '5b1c…' }
 */
export function unframe(framed: Uint8Array): { bytes: Uint8Array; digest: string } {
  return {
    bytes: framed.subarray(DIGEST_BYTES),
    digest: Buffer.from(framed.buffer, framed.byteOffset, DIGEST_BYTES).toString('hex'),
  }
}
