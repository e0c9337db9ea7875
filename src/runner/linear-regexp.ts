/** Escapes that mean the same with and without the `u` flag and match no surrogate code unit. */
const ESCAPES = new Set([...'dswbtnrfv', ...'^$\\.*+?()[]{}|/'])
/** The same inside a character class, where `\b` is a backspace and `\-` a hyphen. */
const CLASS_ESCAPES = new Set([...ESCAPES, '-'])

/**
 * Whether a pattern that is valid with the `u` flag (and no other flag that matters) matches
 * exactly the same strings without it, for every well-formed string, and uses no construct V8's
 * linear-time engine refuses (lookaround). True only for a conservative subset:
 *
 * - printable ASCII only, so no literal, escape or class can denote a surrogate or astral character,
 *   and `\u{…}`, `\p{…}` and `\x..` are left out altogether;
 * - no `.`, no negated class `[^…]`, no `\D`, `\S`, `\W` or `\B`: the only atoms that can match one
 *   half of a surrogate pair, or succeed between its halves;
 * - escapes `\d \s \w \b \t \n \r \f \v` and escaped syntax characters; groups `(…)`, `(?:…)`,
 *   `(?<name>…)`; no lookahead, lookbehind or `\k`, and no numeric backreference.
 *
 * Why these are equivalent: every atom left matches only non-surrogate code units, which are whole
 * code points in both modes, so a match never covers part of a surrogate pair; and no assertion
 * left (`^`, `$`, `\b`) holds between the halves of a pair, so a match cannot start there either.
 *
 * @example
 * sameWithoutUnicodeFlag('^(a+)+$') // true
 * sameWithoutUnicodeFlag('^.+$') // false: `.` matches one code point with `u`, one code unit without
 */
export function sameWithoutUnicodeFlag(source: string): boolean {
  let inClass = false
  for (let i = 0; i < source.length; i++) {
    const code = source.charCodeAt(i)
    if (code < 0x20 || code > 0x7e) return false
    const c = source[i] as string
    if (c === '\\') {
      const next = source[++i]
      if (next === undefined || !(inClass ? CLASS_ESCAPES : ESCAPES).has(next)) return false
      continue
    }
    if (inClass) {
      if (c === ']') inClass = false
      continue
    }
    if (c === '.') return false
    if (c === '[') {
      if (source[i + 1] === '^') return false
      inClass = true
      continue
    }
    if (c === '(' && source[i + 1] === '?') {
      const kind = source[i + 2]
      const after = source[i + 3]
      const nonCapturing = kind === ':'
      const named = kind === '<' && after !== '=' && after !== '!'
      if (!nonCapturing && !named) return false
    }
  }
  return true
}

/**
 * Makes `new RegExp(source, 'u')` (and `RegExp(source, 'u')`) compile without the `u` flag when
 * {@link sameWithoutUnicodeFlag} holds, in the calling thread only. Installed in the tool workers,
 * never on the main thread.
 *
 * Why: V8's linear-time fallback (`--enable-experimental-regexp-engine-on-excessive-backtracks`)
 * refuses patterns with the `u` flag (V8 11.3, Node 20), and the JSON Schema evaluator compiles
 * every `pattern` with `u` (ECMA-262 semantics, as JSON Schema requires). Without `u`, a
 * catastrophic pattern such as `^(a+)+$` falls back to the linear engine after 50,000 backtracks
 * instead of running for minutes; its result is the same. A pattern outside the subset keeps its
 * `u` flag and runs under the tool's time budget. The SyntaxError of an invalid pattern is the
 * one the `u` flag gives, because the pattern is compiled with it first.
 *
 * Regex literals and every other constructor call are untouched; `instanceof RegExp`, the
 * prototype and the static members are the native ones (a Proxy of the native constructor).
 */
export function installLinearUnicodeRegExp(): void {
  const Native = globalThis.RegExp
  const adjust = (args: unknown[]): unknown[] => {
    const [source, flags] = args
    if (
      typeof source !== 'string' ||
      (flags !== 'u' && flags !== 'du' && flags !== 'mu' && flags !== 'dmu') ||
      !sameWithoutUnicodeFlag(source)
    ) {
      return args
    }
    new Native(source, flags)
    return [source, flags.replace('u', '')]
  }
  const proxy: RegExpConstructor = new Proxy(Native, {
    construct(target, args, newTarget) {
      return newTarget === proxy
        ? Reflect.construct(target, adjust(args), target)
        : Reflect.construct(target, args, newTarget)
    },
    apply(target, thisArg, args) {
      return Reflect.apply(target, thisArg, adjust(args))
    },
  })
  globalThis.RegExp = proxy
}
