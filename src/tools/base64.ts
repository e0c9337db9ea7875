import { z } from 'zod'
import { decodeBase64Strict, encodeBase64, encodeBase64Url, encodeHex } from './codec/rfc4648.js'
import { base64Text, lowerHex, utf8Text } from './fields.js'
import { MAX_TEXT_BYTES } from './limits.js'
import type { ToolDefinition } from './types.js'
import { utf8DecodeStrict, utf8Encode, wellFormedFields } from './unicode.js'

/** Request body of POST /base64 (SPEC 2.2). */
export const base64Input = z
  .object({
    mode: z.enum(['encode', 'decode']).describe('encode UTF-8 text, or decode Base64 text.'),
    input: utf8Text({
      maxBytes: MAX_TEXT_BYTES,
      description:
        'encode: UTF-8 text. decode: Base64 text in one alphabet (standard or URL-safe), padded or not; ASCII whitespace is ignored.',
    }).default(''),
  })
  .strict()

/** Parsed base64 request (defaults applied). */
export type Base64Input = z.output<typeof base64Input>

/** `result` of an encode call. */
export const base64EncodeOutput = z.object({
  output: base64Text.describe('Standard Base64 with padding (RFC 4648 section 4).'),
  output_url: z
    .string()
    .regex(/^[A-Za-z0-9_-]*$/)
    .describe('URL-safe Base64 without padding (RFC 4648 section 5).'),
  input_bytes: z.number().int().min(0).describe('Number of UTF-8 bytes encoded.'),
})

/** `result` of a decode call. */
export const base64DecodeOutput = z.object({
  text: z
    .string()
    .nullable()
    .describe('Decoded bytes as UTF-8 text, or null when they are not valid UTF-8.'),
  utf8_valid: z.boolean().describe('Whether the decoded bytes are valid UTF-8.'),
  byte_length: z.number().int().min(0).describe('Number of decoded bytes.'),
  alphabet: z
    .enum(['standard', 'url'])
    .describe('url when the input contains - or _, otherwise standard.'),
  padded: z.boolean().describe('Whether the input ended in = padding.'),
  hex: lowerHex
    .optional()
    .describe('Decoded bytes as lowercase hex; present only when utf8_valid is false.'),
})

/** `result` of a base64 call: the encode or the decode shape, by mode. */
export const base64Output = z.union([base64EncodeOutput, base64DecodeOutput])

/** Result of {@link base64}. */
export type Base64Result = z.output<typeof base64Output>

/** The shape check of base64 (see `ToolDefinition.check`): well-formed Unicode in input. */
export const checkBase64 = wellFormedFields<Base64Input>('input')

/**
 * Base64 encode (UTF-8 text to RFC 4648 sections 4 and 5) or strict decode.
 *
 * @example base64({ mode: 'encode', input: 'foobar' }) // { output: 'Zm9vYmFy', output_url: 'Zm9vYmFy', input_bytes: 6 }
 * @example base64({ mode: 'decode', input: '/w==' }) // { text: null, utf8_valid: false, hex: 'ff', ... }
 * @throws {ToolError} `invalid_unicode`; `invalid_base64` with `{ reason, offset }` (decode)
 */
export function base64(input: Base64Input): Base64Result {
  checkBase64(input)
  if (input.mode === 'encode') {
    const bytes = utf8Encode(input.input)
    return {
      output: encodeBase64(bytes),
      output_url: encodeBase64Url(bytes),
      input_bytes: bytes.length,
    }
  }
  const decoded = decodeBase64Strict(input.input)
  const text = utf8DecodeStrict(decoded.bytes)
  return {
    text,
    utf8_valid: text !== null,
    byte_length: decoded.bytes.length,
    alphabet: decoded.alphabet,
    padded: decoded.padded,
    ...(text === null ? { hex: encodeHex(decoded.bytes) } : {}),
  }
}

/** Catalogue entry of the base64 tool (SPEC 4.1: POST /base64, payload_base64, 0.001 USDC). */
export const base64Tool: ToolDefinition<Base64Input, Base64Result> = {
  id: 'base64',
  path: '/base64',
  mcpName: 'payload_base64',
  operationId: 'base64',
  price: '1000',
  inline: true,
  title: 'Base64',
  description:
    'Encode UTF-8 text as Base64 (standard and URL-safe), or strictly decode Base64; invalid UTF-8 is reported as hex, never replaced.',
  input: base64Input,
  output: base64Output,
  examples: [
    { mode: 'encode', input: 'hello world' },
    { mode: 'decode', input: 'aGVsbG8gd29ybGQ=' },
    { mode: 'decode', input: '_w' },
  ],
  limits: [
    'input: at most 1 MiB of UTF-8; must be well-formed Unicode (no lone surrogates)',
    'decode: one alphabet per input, padding only at the end, length mod 4 never 1',
  ],
  check: checkBase64,
  run: (input) => base64(input),
}
