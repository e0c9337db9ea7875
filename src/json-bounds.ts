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
    if (depth > bounds.depth) return `it is nested more than ${bounds.depth} levels deep`
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
