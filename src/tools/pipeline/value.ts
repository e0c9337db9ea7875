import canonicalize from 'canonicalize'
import { inspectJson } from '../json-value.js'
import { MAX_JSON_DEPTH } from '../limits.js'
import { ToolError } from '../types.js'
import { utf8DecodeStrict, utf8Encode } from '../unicode.js'

/** The pipeline's current value: raw bytes, or a parsed JSON value. */
export type PipelineValue = { kind: 'bytes'; bytes: Uint8Array } | { kind: 'json'; value: unknown }

/**
 * RFC 8785 (JCS) canonical UTF-8 bytes of a JSON value, via the `canonicalize` package: members
 * sorted by UTF-16 code units, ECMAScript number serialisation, minimal string escaping.
 *
 * @example canonicalBytes({ b: 1, a: [1e30, 4.50] }) // bytes of '{"a":[1e+30,4.5],"b":1}'
 */
export function canonicalBytes(value: unknown): Uint8Array {
  const text = canonicalize(value)
  if (text === undefined) throw new ToolError('json_parse_failed', 'the value has no JSON form')
  return utf8Encode(text)
}

/** Bytes of the current value; a JSON value is canonicalised first (RFC 8785). */
export function toBytes(current: PipelineValue): Uint8Array {
  return current.kind === 'bytes' ? current.bytes : canonicalBytes(current.value)
}

/**
 * Parses UTF-8 bytes as JSON (RFC 8259), strictly: invalid UTF-8 is an error rather than U+FFFD,
 * and a BOM is not skipped. The result is depth-checked because canonicalisation recurses, and a
 * number that overflows to Infinity (1e400) is refused, since RFC 8785 cannot write it.
 *
 * @throws {ToolError} `json_parse_failed` `{ reason: 'utf8' | 'syntax' }`, `invalid_unicode`,
 *   `json_too_deep`, `number_out_of_range`
 */
export function parseJsonBytes(bytes: Uint8Array): unknown {
  const text = utf8DecodeStrict(bytes)
  if (text === null) {
    throw new ToolError('json_parse_failed', 'the bytes are not valid UTF-8', { reason: 'utf8' })
  }
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new ToolError('json_parse_failed', `not valid JSON: ${(error as Error).message}`, {
      reason: 'syntax',
    })
  }
  inspectJson(value, { field: '', maxDepth: MAX_JSON_DEPTH, tooDeep: 'json_too_deep' })
  return value
}
