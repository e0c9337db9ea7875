import {
  BACKSLASH,
  CLOSE_ARRAY,
  CLOSE_OBJECT,
  OPEN_ARRAY,
  OPEN_OBJECT,
  QUOTE,
} from './json-bounds.js'

/** Where a value lies in a JSON text, in bytes: `bytes.subarray(start, end)` is its text. */
export interface ByteRange {
  start: number
  end: number
}

const COMMA = 0x2c
const COLON = 0x3a

const encoder = new TextEncoder()

/** Bytes of a string read one by one before the native search takes over. */
const BYTE_LOOP = 32

/**
 * A text's bytes twice: a Uint8Array for the byte loops (faster to index than a Buffer) and a
 * Buffer for its native `indexOf`.
 */
interface Text {
  bytes: Uint8Array
  buffer: Buffer
}

/** A key of a path, as UTF-8, and what it leads to: deeper keys, or a located value. */
interface Step {
  key: Uint8Array
  /** The paths (their index) whose value lies at or below this step. */
  below: number[]
  /** The path whose value this step's value is, if one ends here. */
  target?: number
  next: Step[]
}

/**
 * The byte ranges of the values at key `paths` (object members from the top-level object down) of
 * a JSON text, each as `JSON.parse` would keep it: of duplicate keys, the last. One pass over the
 * bytes that builds nothing of the text, so that it may run where a parse of the whole body must
 * not (the thread that serves requests): the values off the paths are skipped by their brackets
 * and quotes only, strings with the native `indexOf`.
 *
 * Undefined for a path that is not there. Everything is undefined when the objects along the
 * paths are not well-formed JSON, hold more than `maxMembers` members, or write a key with an
 * escape (`"p\u0061rams"`: the bytes alone cannot say what `JSON.parse` makes of it, so nothing
 * is located). Values off the paths are not checked: a caller that relies on the text being JSON
 * parses it afterwards.
 *
 * @param maxMembers - most members of an object along the paths; default unbounded
 * @example
 * locateMembers(utf8('{"params":{"name":"payload_hash","arguments":{"input":"x"}}}'), [['params', 'arguments']])
 * // [{ start: 45, end: 58 }]: the text {"input":"x"}
 */
export function locateMembers(
  bytes: Uint8Array,
  paths: readonly (readonly string[])[],
  maxMembers = Number.POSITIVE_INFINITY,
): (ByteRange | undefined)[] {
  const found: (ByteRange | undefined)[] = paths.map(() => undefined)
  const text: Text = {
    bytes: new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength),
    buffer: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength),
  }
  const longest = Math.max(0, ...paths.flat().map((key) => encoder.encode(key).length))
  const reader = { text, found, maxMembers, longest }
  const start = skipSpace(text, 0)
  const end = text.bytes[start] === OPEN_OBJECT ? readObject(reader, start, stepsOf(paths)) : -1
  if (end < 0 || skipSpace(text, end) !== bytes.length) return paths.map(() => undefined)
  return found
}

interface Reader {
  text: Text
  found: (ByteRange | undefined)[]
  maxMembers: number
  /** Bytes of the longest key on the paths. */
  longest: number
}

/**
 * Reads the object opening at `open` whose keys may match `steps`, recording the values of the
 * steps that end a path.
 *
 * @returns the index after its closing brace, or -1 when it is not well-formed
 */
function readObject(reader: Reader, open: number, steps: readonly Step[]): number {
  const { text, found } = reader
  const { bytes } = text
  let i = skipSpace(text, open + 1)
  if (bytes[i] === CLOSE_OBJECT) return i + 1
  for (let members = 1; members <= reader.maxMembers; members++) {
    if (bytes[i] !== QUOTE) return -1
    const keyEnd = stringEnd(text, i)
    if (keyEnd < 0 || escaped(bytes, i + 1, keyEnd - 1, reader.longest)) return -1
    const step = steps.find((s) => sameBytes(bytes, i + 1, keyEnd - 1, s.key))
    // A repeated key replaces the whole value (JSON.parse keeps the last).
    if (step) for (const path of step.below) found[path] = undefined
    i = skipSpace(text, keyEnd)
    if (bytes[i] !== COLON) return -1
    const start = skipSpace(text, i + 1)
    const c = bytes[start]
    const end =
      c === OPEN_OBJECT && step && step.next.length > 0
        ? readObject(reader, start, step.next)
        : c === OPEN_OBJECT || c === OPEN_ARRAY
          ? containerEnd(text, start)
          : c === QUOTE
            ? stringEnd(text, start)
            : scalarEnd(text, start)
    if (end < 0) return -1
    if (step?.target !== undefined) found[step.target] = { start, end }
    i = skipSpace(text, end)
    if (bytes[i] === CLOSE_OBJECT) return i + 1
    if (bytes[i] !== COMMA) return -1
    i = skipSpace(text, i + 1)
  }
  return -1
}

/** The steps of a set of paths, as a tree from the top-level object's keys. */
function stepsOf(paths: readonly (readonly string[])[]): Step[] {
  const root: Step[] = []
  paths.forEach((path, index) => {
    let level = root
    path.forEach((key, depth) => {
      const bytes = encoder.encode(key)
      let step = level.find((s) => Buffer.compare(s.key, bytes) === 0)
      if (!step) {
        step = { key: bytes, below: [], next: [] }
        level.push(step)
      }
      step.below.push(index)
      if (depth === path.length - 1) step.target = index
      level = step.next
    })
  })
  return root
}

/**
 * The index after the array or object opening at `open`, found by its brackets outside strings
 * (RFC 8259), or -1 when it never closes.
 */
function containerEnd(text: Text, open: number): number {
  const { bytes } = text
  let depth = 0
  for (let i = open; i < bytes.length; i++) {
    const c = bytes[i] as number
    // Below '[' only the quote matters; `& 0xdf` folds '{' onto '[' and '}' onto ']'.
    if (c < OPEN_ARRAY) {
      if (c !== QUOTE) continue
      const end = stringEnd(text, i)
      if (end < 0) return -1
      i = end - 1
    } else if ((c & 0xdf) === OPEN_ARRAY) depth++
    else if ((c & 0xdf) === CLOSE_ARRAY && --depth === 0) return i + 1
  }
  return -1
}

/**
 * The index after the closing quote of the string opened at `open`, or -1 when it never closes:
 * a byte loop over its first bytes and over runs of escapes, the native `indexOf` over the rest.
 */
function stringEnd(text: Text, open: number): number {
  const { bytes } = text
  let i = open + 1
  for (;;) {
    const run = Math.min(bytes.length, i + BYTE_LOOP)
    for (; i < run; i++) {
      const c = bytes[i]
      if (c === QUOTE) return i + 1
      if (c === BACKSLASH) i++
    }
    if (i >= bytes.length) return -1
    const quote = text.buffer.indexOf(QUOTE, i)
    if (quote < 0) return -1
    let backslashes = 0
    while (bytes[quote - 1 - backslashes] === BACKSLASH) backslashes++
    if (backslashes % 2 === 0) return quote + 1
    i = quote + 1
  }
}

/** The index after a number, `true`, `false` or `null` starting at `start` (-1 if empty). */
function scalarEnd(text: Text, start: number): number {
  const { bytes } = text
  let end = start
  while (end < bytes.length) {
    const c = bytes[end] as number
    if (c === COMMA || c === CLOSE_OBJECT || c === CLOSE_ARRAY || c === QUOTE || isSpace(c)) break
    if (c === OPEN_OBJECT || c === OPEN_ARRAY) break
    end++
  }
  return end > start ? end : -1
}

/**
 * Whether a key's bytes hold an escape while they are short enough to spell a key of `longest`
 * bytes with escapes (at most 6 bytes, `\u00XX`, per byte).
 */
function escaped(text: Uint8Array, start: number, end: number, longest: number): boolean {
  if (end - start > 6 * longest) return false
  for (let k = start; k < end; k++) if (text[k] === BACKSLASH) return true
  return false
}

function sameBytes(text: Uint8Array, start: number, end: number, key: Uint8Array): boolean {
  if (end - start !== key.length) return false
  for (let k = 0; k < key.length; k++) if (text[start + k] !== key[k]) return false
  return true
}

function skipSpace(text: Text, from: number): number {
  const { bytes } = text
  let i = from
  while (i < bytes.length && isSpace(bytes[i] as number)) i++
  return i
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09
