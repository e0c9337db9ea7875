// Walks over whole tool inputs and results, so failures are thrown by hand rather than through
// one `expect` per node (a 10,000-line diff result has some 30,000 numbers).

function fail(message: string): never {
  throw new Error(message)
}

/**
 * Fails unless every own key and value of the raw `input` is still in `parsed`, at the same path
 * (keys with defaults may be added; nothing may be dropped or changed). Zod rebuilds objects it
 * parses as records or shapes, and a parser that silently drops a key such as `__proto__` makes
 * the tool answer a different question than the one asked.
 */
export function expectPreserved(input: unknown, parsed: unknown): void {
  const stack: Array<[unknown, unknown, string]> = [[input, parsed, '']]
  while (stack.length > 0) {
    const [a, b, path] = stack.pop() as [unknown, unknown, string]
    if (a === b) continue // the same value or object: nothing was rebuilt below here
    if (a === null || typeof a !== 'object') fail(`the value at "${path}" changed in parsing`)
    if (typeof b !== 'object' || b === null || Array.isArray(a) !== Array.isArray(b)) {
      fail(`"${path}" changed its JSON type in parsing`)
    }
    for (const key of Object.keys(a)) {
      if (!Object.hasOwn(b, key))
        fail(`key ${JSON.stringify(key)} at "${path}" was dropped in parsing`)
      stack.push([
        (a as Record<string, unknown>)[key],
        (b as Record<string, unknown>)[key],
        `${path}/${key}`,
      ])
    }
  }
}

/**
 * Fails unless `value` is exactly what its JSON text says: null, booleans, finite numbers,
 * strings, arrays and plain objects, with no `undefined`, NaN or Infinity (JSON.stringify would
 * write them as null or drop them, so a client would read another result than the tool computed).
 */
export function expectJsonSafe(value: unknown): void {
  const stack: Array<[unknown, string]> = [[value, '']]
  while (stack.length > 0) {
    const [v, path] = stack.pop() as [unknown, string]
    if (v === null || typeof v === 'boolean' || typeof v === 'string') continue
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) fail(`the result holds ${v} at "${path}", which JSON writes as null`)
      continue
    }
    if (typeof v !== 'object') fail(`the result holds a ${typeof v} at "${path}"`)
    if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v[i], `${path}/${i}`])
      continue
    }
    const proto = Object.getPrototypeOf(v)
    if (proto !== Object.prototype && proto !== null) fail(`"${path}" is not a plain object`)
    for (const [key, item] of Object.entries(v)) stack.push([item, `${path}/${key}`])
  }
}
