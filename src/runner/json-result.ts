import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { unframe } from './framed.js'

const decoder = new TextDecoder()

/**
 * A tool result as the UTF-8 JSON its worker serialized, moved to the main thread without a copy
 * (the worker transfers the buffer), with the SHA-256 of its RFC 8785 form (the worker computed
 * it too). The HTTP adapter writes the bytes into the response as they are; only a consumer that
 * needs the value (MCP's `structuredContent`) parses it.
 *
 * Why not the object itself: structured cloning a large result (text-diff's 10,000 lines) blocks
 * the main thread, and serializing it again for the response as much; JSON made in the worker
 * costs the main thread nothing.
 *
 * @example
 * const result = JsonResult.of({ hex: 'ba78…' })
 * result.value() // { hex: 'ba78…' }
 * result.digest // lower-case hex SHA-256 of '{"hex":"ba78…"}'
 */
export class JsonResult {
  #value: unknown
  #parsed = false

  /**
   * @param bytes - UTF-8 JSON text (what `JSON.stringify` gives, so `undefined` members are gone)
   * @param digest - lower-case hex SHA-256 of the result's RFC 8785 form
   */
  constructor(
    readonly bytes: Uint8Array,
    readonly digest: string,
  ) {}

  /** The parsed value, parsed once. */
  value(): unknown {
    if (!this.#parsed) {
      this.#value = JSON.parse(decoder.decode(this.bytes))
      this.#parsed = true
    }
    return this.#value
  }

  /**
   * A result from a tool worker's buffer: the SHA-256, then the JSON (`frame` in framed.ts).
   * The JSON is a view on the same memory, not a copy.
   */
  static fromWorker(framed: Uint8Array): JsonResult {
    const { bytes, digest } = unframe(framed)
    return new JsonResult(bytes, digest)
  }

  /**
   * A result built on the calling thread (tests, tools run inline).
   *
   * @example JsonResult.of({ upper: 'ABC' }).bytes // UTF-8 of '{"upper":"ABC"}'
   */
  static of(value: unknown): JsonResult {
    const digest = createHash('sha256')
      .update(canonicalize(value) ?? '')
      .digest('hex')
    return new JsonResult(new TextEncoder().encode(JSON.stringify(value)), digest)
  }
}
