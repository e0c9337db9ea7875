import { z } from 'zod'
import { objectLengthPath } from './json-value.js'

/**
 * `schema.safeParse(value)` for a value from outside (a request body, MCP arguments): a value
 * whose validation Zod itself cannot finish is refused as an issue instead of thrown.
 *
 * Why not plain `safeParse`: Zod 4 (4.6.7 here) runs a length check (`.min`, `.max` or
 * `.length` of a string or an array) on any value with a `length` member, also after the type
 * check failed (the check's default `when`), and compares that member with a number. Where a
 * string or an array is expected, `{"length": {"toString": 1}}` makes the comparison throw a
 * `TypeError` ("Cannot convert object to primitive value"), and `{"length": [[[…]]]}` nested deep
 * enough a `RangeError`: `safeParse` throws, which the service would answer as an internal error
 * (docs/upstream.md). JSON gives no other value that makes such a comparison throw.
 *
 * @param schema - a Zod 4 schema
 * @param value - a parsed JSON value
 * @returns the schema's own result; or, when the parse threw and the value holds an object-valued
 *   `length` member (the cause above), a failure with one `custom` issue at that member's holder
 *   ({@link objectLengthPath}: the first in document order, with several not necessarily the one
 *   the schema measured)
 * @throws whatever the parse threw when the value holds no such member: a fault of the schema's own
 *   code (a refinement or transform), which the caller reports as a crash
 *
 * @example safeParseUntrusted(z.array(z.string()).max(2), { length: { toString: 1 } })
 * // { success: false, error: ZodError [{ code: 'custom', path: [], message: 'Invalid input: …' }] }
 */
export function safeParseUntrusted<S extends z.ZodType>(
  schema: S,
  value: unknown,
): z.ZodSafeParseResult<z.output<S>> {
  try {
    return schema.safeParse(value)
  } catch (error) {
    const path = objectLengthPath(value)
    if (path === undefined) throw error
    return {
      success: false,
      error: new z.ZodError([
        {
          code: 'custom',
          path,
          message:
            'Invalid input: an object whose "length" member is an object or an array cannot be validated',
          input: undefined,
        },
      ]) as z.ZodError<z.output<S>>,
    }
  }
}
