import type { ToolErrorCode } from './errors.js'
import { ToolError } from './types.js'
import { firstLoneSurrogate } from './unicode.js'

/** What {@link inspectJson} learned about a JSON value. */
export interface JsonStats {
  /** Deepest nesting of arrays and objects (a scalar is 0, `[1]` is 1). */
  depth: number
  /** Length of the longest array anywhere in the value (0 when there is none). */
  longestArray: number
}

interface Frame {
  value: unknown
  depth: number
  parent: Frame | undefined
  key: string
}

/** The keys from the root to a frame (array indices as strings). */
function keysOf(frame: Frame | undefined): string[] {
  const keys: string[] = []
  for (let f = frame; f?.parent; f = f.parent) keys.push(f.key)
  return keys.reverse()
}

function pointerOf(frame: Frame | undefined, field: string): string {
  const parts = keysOf(frame).map((key) => key.replace(/~/g, '~0').replace(/\//g, '~1'))
  return `${field}${parts.length ? '/' : ''}${parts.join('/')}`
}

/**
 * Walks a parsed JSON value without recursion (the value may be nested thousands of levels deep
 * before we know it), checking that every string and key is well-formed Unicode and that nesting
 * stays within `maxDepth`.
 *
 * @example inspectJson({ a: [1, 2] }, { field: '/value', maxDepth: 128, tooDeep: 'value_too_deep' })
 * // { depth: 2, longestArray: 2 }
 * @param options.field - JSON Pointer prefix used in error details, e.g. "/value"
 * @param options.tooDeep - error code when nesting exceeds `maxDepth`
 * @throws {ToolError} `invalid_unicode` with `{ field, offset }`, where field is the JSON Pointer of
 *   the string or of the object holding the bad key; `tooDeep` with `{ field, limit }`;
 *   `number_out_of_range` with `{ field }` (see {@link assertFiniteNumbers})
 */
export function inspectJson(
  value: unknown,
  options: { field: string; maxDepth: number; tooDeep: ToolErrorCode },
): JsonStats {
  const stats: JsonStats = { depth: 0, longestArray: 0 }
  const stack: Frame[] = [{ value, depth: 0, parent: undefined, key: '' }]
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const current = frame.value
    if (typeof current === 'string') {
      checkString(current, frame, options.field)
      continue
    }
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) outOfRange(pointerOf(frame, options.field))
      continue
    }
    if (current === null || typeof current !== 'object') continue
    const depth = frame.depth + 1
    if (depth > options.maxDepth) {
      const field = pointerOf(frame, options.field)
      throw new ToolError(
        options.tooDeep,
        `${field || 'value'} is nested more than ${options.maxDepth} levels deep`,
        { field, limit: options.maxDepth },
      )
    }
    if (depth > stats.depth) stats.depth = depth
    if (Array.isArray(current)) {
      if (current.length > stats.longestArray) stats.longestArray = current.length
      for (let i = current.length - 1; i >= 0; i--) {
        stack.push({ value: current[i], depth, parent: frame, key: String(i) })
      }
      continue
    }
    const entries = Object.entries(current)
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown]
      const offset = firstLoneSurrogate(key)
      if (offset !== -1) {
        const field = pointerOf(frame, options.field)
        throw new ToolError(
          'invalid_unicode',
          `an object key in ${field || 'value'} is not well-formed Unicode: lone surrogate at offset ${offset}`,
          { field, offset },
        )
      }
      stack.push({ value: child, depth, parent: frame, key })
    }
  }
  return stats
}

function checkString(text: string, frame: Frame, prefix: string): void {
  const offset = firstLoneSurrogate(text)
  if (offset === -1) return
  const field = pointerOf(frame, prefix)
  throw new ToolError(
    'invalid_unicode',
    `${field || 'value'} is not well-formed Unicode: lone surrogate at offset ${offset}`,
    { field, offset },
  )
}

function outOfRange(field: string): never {
  throw new ToolError(
    'number_out_of_range',
    `${field || 'value'} is a number beyond the IEEE 754 double range (such as 1e400), which JSON parsing turns into Infinity`,
    { field },
  )
}

/**
 * Rejects a parsed JSON value holding a number that overflowed to Infinity: `JSON.parse('1e400')`
 * gives Infinity, which JSON.stringify writes as `null` and RFC 8785 cannot canonicalise, so a
 * result would silently show another value than the one sent. Iterative, like {@link inspectJson}
 * (which checks the same and more); this one checks numbers only.
 *
 * @example assertFiniteNumbers(JSON.parse('{"exp":1e400}'), '/claims') // throws, field "/claims/exp"
 * @throws {ToolError} `number_out_of_range` with `{ field }`, the JSON Pointer of the number
 */
export function assertFiniteNumbers(value: unknown, field: string): void {
  const stack: Frame[] = [{ value, depth: 0, parent: undefined, key: '' }]
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const current = frame.value
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) outOfRange(pointerOf(frame, field))
      continue
    }
    if (current === null || typeof current !== 'object') continue
    for (const [key, child] of Object.entries(current)) {
      stack.push({ value: child, depth: frame.depth + 1, parent: frame, key })
    }
  }
}

/**
 * The path (keys from the root, array indices as strings) of the first object, in document order,
 * whose own `length` member is an object or an array; undefined when there is none. Such a value
 * is what makes a Zod length check throw (src/tools/untrusted-parse.ts). Iterative, like
 * {@link inspectJson}: any nesting depth the JSON parser accepted, in time linear in the value.
 *
 * @example objectLengthPath({ a: [1, { length: [] }] }) // ['a', '1']
 */
export function objectLengthPath(value: unknown): string[] | undefined {
  const stack: Frame[] = [{ value, depth: 0, parent: undefined, key: '' }]
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    const current = frame.value
    if (current === null || typeof current !== 'object') continue
    const entries = Array.isArray(current)
      ? current.map((child, i): [string, unknown] => [String(i), child])
      : Object.entries(current)
    if (!Array.isArray(current) && Object.hasOwn(current, 'length')) {
      const length = (current as { length: unknown }).length
      if (typeof length === 'object' && length !== null) return keysOf(frame)
    }
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i] as [string, unknown]
      stack.push({ value: child, depth: frame.depth + 1, parent: frame, key })
    }
  }
  return undefined
}
