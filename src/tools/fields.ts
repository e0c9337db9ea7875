import { z } from 'zod'
import { formatBytes } from './limits.js'
import { utf8Length } from './unicode.js'

/**
 * A UTF-8 text field capped in bytes. `maxLength` in the generated JSON Schema is a looser,
 * character-based bound (a string never has more UTF-16 units than UTF-8 bytes); the exact byte
 * cap is enforced by a refinement.
 *
 * @example utf8Text({ maxBytes: 1024, description: 'Text to hash' })
 */
export function utf8Text(options: { maxBytes: number; description: string }) {
  const label = formatBytes(options.maxBytes)
  return z
    .string()
    .max(options.maxBytes, { message: `must be at most ${label} of UTF-8` })
    .refine((text) => utf8Length(text) <= options.maxBytes, {
      message: `must be at most ${label} of UTF-8`,
    })
    .describe(options.description)
}

const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * A JSON object field passed to the tool exactly as parsed. `z.record` would rebuild the object
 * and silently drop an own `"__proto__"` key (Zod guards its output's prototype that way), so a
 * schema `{"__proto__": …}` would lose a keyword before json-validate could refuse it. The
 * generated JSON Schema is the one `z.record(z.string(), z.unknown())` gives.
 *
 * @example jsonObject('JSON Schema as an object').parse(JSON.parse('{"__proto__":1}')) // own key kept
 */
export function jsonObject(description: string): z.ZodType<Record<string, unknown>> {
  return z
    .unknown()
    .refine(isJsonObject, { message: 'Invalid input: expected object' })
    .meta({ type: 'object', propertyNames: { type: 'string' }, additionalProperties: {} })
    .describe(description) as z.ZodType<Record<string, unknown>>
}

/** SHA-2 algorithm names accepted by hash and hmac (SPEC 2.2). */
export const digestAlgorithm = z.enum(['SHA-256', 'SHA-384', 'SHA-512'])

/** One of `SHA-256`, `SHA-384`, `SHA-512`. */
export type DigestAlgorithm = z.output<typeof digestAlgorithm>

/** node:crypto names of the SHA-2 algorithms. */
export const nodeDigestName: Record<DigestAlgorithm, 'sha256' | 'sha384' | 'sha512'> = {
  'SHA-256': 'sha256',
  'SHA-384': 'sha384',
  'SHA-512': 'sha512',
}

/** Lowercase hexadecimal text. */
export const lowerHex = z.string().regex(/^[0-9a-f]*$/)

/** Standard Base64 text with padding (RFC 4648 section 4). */
export const base64Text = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/)
