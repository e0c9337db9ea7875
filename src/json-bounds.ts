/**
 * Bounds of a JSON value that came from a client, checked before any library walks it: several
 * of them (the x402 SDK's `deepEqual`, Zod on wide objects) cost more than linear time in depth or
 * width.
 */
export interface JsonBounds {
  /** Nesting of arrays and objects. */
  depth: number
  /** Values in all (objects, arrays, strings, numbers…). */
  nodes: number
  /** Members of one object, items of one array. */
  members: number
  /** UTF-16 code units of one string or key. */
  string: number
  /** UTF-16 code units of all strings and keys together. */
  text: number
}

/** The words of a depth bound broken, as {@link jsonBoundExceeded} gives them. */
export const depthExceeded = (depth: number) => `it is nested more than ${depth} levels deep`

/**
 * The first bound a JSON value breaks, in words, or undefined. Iterative, linear in the value's
 * size, and it stops at the first excess, so its cost is bounded by the bounds themselves.
 *
 * @example jsonBoundExceeded([[[]]], { depth: 2, nodes: 10, members: 10, string: 10, text: 10 })
 * // 'it is nested more than 2 levels deep'
 */
export function jsonBoundExceeded(value: unknown, bounds: JsonBounds): string | undefined {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }]
  let nodes = 0
  let text = 0
  for (let frame = stack.pop(); frame; frame = stack.pop()) {
    if (++nodes > bounds.nodes) return `it holds more than ${bounds.nodes} values`
    const current = frame.value
    if (typeof current === 'string') {
      if (current.length > bounds.string) return `a string is longer than ${bounds.string}`
      text += current.length
      if (text > bounds.text) return `its strings are longer than ${bounds.text} in all`
      continue
    }
    if (current === null || typeof current !== 'object') continue
    const depth = frame.depth + 1
    if (depth > bounds.depth) return depthExceeded(bounds.depth)
    const children = Array.isArray(current) ? current : Object.values(current)
    if (children.length > bounds.members) {
      return `an object or array holds more than ${bounds.members} members`
    }
    if (!Array.isArray(current)) {
      for (const key of Object.keys(current)) {
        if (key.length > bounds.string) return `a key is longer than ${bounds.string}`
        text += key.length
      }
      if (text > bounds.text) return `its strings are longer than ${bounds.text} in all`
    }
    for (const child of children) stack.push({ value: child, depth })
  }
  return undefined
}

// JSON's structural characters (RFC 8259), as UTF-16 code units and UTF-8 bytes alike.
export const QUOTE = 0x22
export const BACKSLASH = 0x5c
export const OPEN_ARRAY = 0x5b
export const CLOSE_ARRAY = 0x5d
export const OPEN_OBJECT = 0x7b
export const CLOSE_OBJECT = 0x7d

/**
 * True when JSON text opens more than `depth` arrays and objects at once, read outside its strings
 * (RFC 8259: `"` opens and closes a string, `\` escapes the next character). One pass over the
 * text that allocates nothing, so that a client's deeply nested text is refused before
 * `JSON.parse` builds every level of it. The text need not be valid JSON: the parse that follows
 * decides that.
 *
 * @example jsonTextDeeperThan('[[["]]]]"]]]', 2) // true: the brackets in the string do not count
 */
export function jsonTextDeeperThan(text: string, depth: number): boolean {
  let open = 0
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === QUOTE) {
      // A string's text is skipped with indexOf (native code): most of a payment's text is strings.
      let end = text.indexOf('"', i + 1)
      while (end !== -1 && escapedAt(text, end)) end = text.indexOf('"', end + 1)
      if (end === -1) return false
      i = end
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++open > depth) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) open--
  }
  return false
}

/**
 * Whether the character at `at`, inside a string, is escaped: preceded by an odd run of
 * backslashes (each escapes the next). Each run is counted for one quote only: linear overall.
 */
function escapedAt(text: string, at: number): boolean {
  let run = 0
  while (text.charCodeAt(at - 1 - run) === BACKSLASH) run++
  return run % 2 === 1
}
