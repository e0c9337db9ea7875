import fc from 'fast-check'

/**
 * A JSON text as a tree, so that what only exists in raw JSON can be generated: duplicate keys,
 * `__proto__` as an own key, number literals that do not survive a round trip through a JS number
 * (`1e400`, `-0`, `9007199254740993`). {@link renderJson} writes it; `JSON.parse` of that text is
 * what the HTTP adapter and the MCP transport hand to the gate.
 */
export type JsonNode =
  | { t: 'raw'; text: string }
  | { t: 'arr'; items: JsonNode[] }
  | { t: 'obj'; entries: Array<[string, JsonNode]> }

/** The node of a JS value that JSON.stringify can write (own enumerable keys, in order). */
export function nodeOf(value: unknown): JsonNode {
  if (Array.isArray(value)) return { t: 'arr', items: value.map(nodeOf) }
  if (value !== null && typeof value === 'object') {
    return { t: 'obj', entries: Object.entries(value).map(([k, v]) => [k, nodeOf(v)]) }
  }
  return { t: 'raw', text: JSON.stringify(value) ?? 'null' }
}

/** JSON text of a node; `JSON.stringify` escapes lone surrogates, so they survive the trip. */
export function renderJson(node: JsonNode): string {
  // Iterative: nodes may be nested far deeper than the call stack allows.
  const out: string[] = []
  const stack: Array<JsonNode | string> = [node]
  while (stack.length > 0) {
    const item = stack.pop() as JsonNode | string
    if (typeof item === 'string') {
      out.push(item)
    } else if (item.t === 'raw') {
      out.push(item.text)
    } else if (item.t === 'arr') {
      out.push('[')
      stack.push(']')
      for (let i = item.items.length - 1; i >= 0; i--) {
        stack.push(item.items[i] as JsonNode)
        if (i > 0) stack.push(',')
      }
    } else {
      out.push('{')
      stack.push('}')
      for (let i = item.entries.length - 1; i >= 0; i--) {
        const [key, value] = item.entries[i] as [string, JsonNode]
        stack.push(value)
        stack.push(`${JSON.stringify(key)}:`)
        if (i > 0) stack.push(',')
      }
    }
  }
  return out.join('')
}

/** A string node. */
export const str = (text: string): JsonNode => ({ t: 'raw', text: JSON.stringify(text) })

/** A lone UTF-16 surrogate (no UTF-8 form): high or low half. */
export const loneSurrogate = fc
  .integer({ min: 0xd800, max: 0xdfff })
  .map((unit) => String.fromCharCode(unit))

/** Short strings with the characters that break naive code. */
export const nastyString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.string({ unit: 'grapheme', maxLength: 8 }),
  fc.string({ unit: 'binary', maxLength: 8 }),
  fc
    .tuple(fc.string({ maxLength: 6 }), loneSurrogate, fc.string({ maxLength: 6 }))
    .map(([a, s, b]) => a + s + b),
  fc.constantFrom(
    '',
    ' ',
    '\u0000',
    '\uFEFF',
    '\r\n',
    '\n\n',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '%',
    '%zz',
    '%E2%82',
    '====',
    'Zm9v\n',
    'eyJ',
    'Bearer ',
    '.',
    '..',
    '...',
    '\\',
    '\\u0000',
    '{"a":1}',
    '[]',
    'null',
    '\u{1F600}',
    'é',
    'e\u0301',
    '\u202E',
  ),
)

/** Number literals as they appear in JSON text, including ones a JS number cannot hold exactly. */
export const nastyNumberText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '0',
    '-0',
    '-0.0',
    '1e400',
    '-1e400',
    '1e-400',
    '9007199254740993',
    '-9007199254740993',
    '9007199254740992',
    '123456789012345678901234567890',
    '5e-324',
    '1.7976931348623157e308',
    '1E+2',
    '0.1',
    '1.5',
    '1700000000',
  ),
  fc.integer().map(String),
  fc.double({ noNaN: true, noDefaultInfinity: true }).map((n) => JSON.stringify(n)),
)

/** Object keys that collide with JS internals or JSON Schema keywords. */
export const nastyKey: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: nastyString, weight: 2 },
  {
    arbitrary: fc.constantFrom(
      '__proto__',
      'constructor',
      'prototype',
      '__defineGetter__',
      'valueOf',
      'toString',
      'toJSON',
      '$ref',
      '$id',
      'type',
      'then',
      'length',
      '0',
    ),
    weight: 1,
  },
)

/** Scalar nodes: nasty numbers, strings, booleans, null. */
export const scalarNode: fc.Arbitrary<JsonNode> = fc.oneof(
  nastyNumberText.map((text): JsonNode => ({ t: 'raw', text })),
  nastyString.map(str),
  fc.constantFrom<JsonNode>(
    { t: 'raw', text: 'true' },
    { t: 'raw', text: 'false' },
    { t: 'raw', text: 'null' },
  ),
)

/**
 * Any JSON node, a few levels deep, with nasty scalars and keys; objects may repeat a key (the
 * last one wins in JSON.parse).
 */
export const nastyNode: fc.Arbitrary<JsonNode> = fc.letrec<{ node: JsonNode }>((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { arbitrary: scalarNode, weight: 3 },
    {
      arbitrary: fc
        .array(tie('node'), { maxLength: 4 })
        .map((items): JsonNode => ({ t: 'arr', items })),
      weight: 1,
    },
    {
      arbitrary: fc
        .array(fc.tuple(nastyKey, tie('node')), { maxLength: 4 })
        .chain((entries) => withDuplicate(entries)),
      weight: 1,
    },
    // An object that a length check takes for a string or an array: Zod compares its `length`
    // with a number even after the type check failed (src/tools/untrusted-parse.ts).
    {
      arbitrary: tie('node').map(
        (length): JsonNode => ({ t: 'obj', entries: [['length', length]] }),
      ),
      weight: 1,
    },
  ),
})).node

/** An object node from entries, sometimes with one key repeated (first or last occurrence kept). */
function withDuplicate(entries: Array<[string, JsonNode]>): fc.Arbitrary<JsonNode> {
  if (entries.length === 0) return fc.constant({ t: 'obj', entries })
  return fc
    .tuple(fc.boolean(), fc.nat(entries.length - 1), fc.nat(entries.length), scalarNode)
    .map(([dup, from, to, value]): JsonNode => {
      if (!dup) return { t: 'obj', entries }
      const copy = [...entries]
      copy.splice(to, 0, [(entries[from] as [string, JsonNode])[0], value])
      return { t: 'obj', entries: copy }
    })
}

/**
 * Arrays or objects nested exactly `depth` levels, around the documented limit or far beyond it.
 *
 * @example deepNode(129) // [[[…1…]]] 129 levels
 */
export function deepNode(
  depth: number,
  leaf: JsonNode = { t: 'raw', text: '1' },
  asObject = false,
): JsonNode {
  let node = leaf
  for (let i = 0; i < depth; i++) {
    node = asObject ? { t: 'obj', entries: [['a', node]] } : { t: 'arr', items: [node] }
  }
  return node
}

/** Nesting depths worth trying against a limit of `limit` levels. */
export function depthsAround(limit: number): fc.Arbitrary<number> {
  return fc.constantFrom(limit - 1, limit, limit + 1, limit + 2, 2 * limit, 5000)
}

/** Units whose UTF-8 size differs: 1, 2, 3 and 4 bytes, a CRLF, a lone LF. */
const SIZE_UNITS = ['a', 'é', '€', '\u{1F600}', '\r\n', '\n', 'ab\n'] as const

/**
 * Strings whose UTF-8 size is at, just under or just over `maxBytes`, built from one repeated
 * unit (multi-byte units cross the byte limit with fewer characters than `maxBytes`).
 *
 * @example sizedString(1024) // e.g. 'é'.repeat(512) (1,024 bytes) or 'a'.repeat(1025)
 */
export function sizedString(maxBytes: number): fc.Arbitrary<string> {
  return (
    fc
      // Half the cases just over the limit: they stop at the schema, so they cost little.
      .tuple(fc.constantFrom(...SIZE_UNITS), fc.constantFrom(-1, 0, 1, 1), fc.boolean())
      .map(([unit, delta, pad]) => {
        const unitBytes = Buffer.byteLength(unit)
        const target = maxBytes + delta
        const count = Math.floor(target / unitBytes)
        const body = unit.repeat(count)
        // Top up with ASCII to hit the target byte count exactly, or stop a unit short.
        return pad ? body + 'x'.repeat(target - count * unitBytes) : body
      })
  )
}
