import { ToolError } from '../../src/tools/types.js'

/**
 * Runs `fn` and returns the ToolError it throws; fails the test when it throws anything else or
 * nothing. For tests only.
 *
 * @example expect(toolErrorOf(() => hash(bad)).code).toBe('invalid_unicode')
 */
export function toolErrorOf(fn: () => unknown): ToolError {
  try {
    fn()
  } catch (error) {
    if (error instanceof ToolError) return error
    throw error
  }
  throw new Error('expected a ToolError, but nothing was thrown')
}

/**
 * The Base64 test vectors of RFC 4648 section 10: `[plain ASCII text, padded standard Base64]`.
 * For tests only.
 */
export const RFC4648_BASE64 = [
  ['', ''],
  ['f', 'Zg=='],
  ['fo', 'Zm8='],
  ['foo', 'Zm9v'],
  ['foob', 'Zm9vYg=='],
  ['fooba', 'Zm9vYmE='],
  ['foobar', 'Zm9vYmFy'],
] as const

/** A fixed clock for tests: 2023-11-14T22:13:20Z. */
export const fixedEnv = { nowSeconds: () => 1_700_000_000 }
