import { createHmac, timingSafeEqual } from 'node:crypto'
import { z } from 'zod'
import {
  base64Text,
  type DigestAlgorithm,
  digestAlgorithm,
  lowerHex,
  nodeDigestName,
  utf8Text,
} from './fields.js'
import { KiB, MAX_TEXT_BYTES } from './limits.js'
import type { ToolDefinition } from './types.js'
import { wellFormedFields } from './unicode.js'

/** Largest accepted secret: 64 KiB of UTF-8 (HMAC hashes any key longer than a block anyway). */
export const MAX_SECRET_BYTES = 64 * KiB

/** Longest accepted `expected_hex` (SHA-512 needs 128 digits; longer is a length mismatch). */
export const MAX_EXPECTED_HEX = 1024

/** Request body of POST /hmac (SPEC 2.2). */
export const hmacInput = z
  .object({
    input: utf8Text({ maxBytes: MAX_TEXT_BYTES, description: 'UTF-8 message.' }).default(''),
    secret: utf8Text({
      maxBytes: MAX_SECRET_BYTES,
      description: 'HMAC key as UTF-8 text; used for this call only, never stored or echoed.',
    }).min(1, { message: 'must not be empty' }),
    algorithm: digestAlgorithm
      .default('SHA-256')
      .describe('SHA-2 algorithm (RFC 2104 with FIPS 180-4).'),
    expected_hex: z
      .string()
      .max(MAX_EXPECTED_HEX)
      .regex(/^[0-9a-fA-F]*$/)
      .optional()
      .describe('Digest to verify against, in hex of either case; compared in constant time.'),
  })
  .strict()

/** Parsed hmac request (defaults applied). */
export type HmacInput = z.output<typeof hmacInput>

/** `result` of an hmac call. */
export const hmacOutput = z.object({
  algorithm: digestAlgorithm.describe('Algorithm used.'),
  hex: lowerHex.describe('HMAC as lowercase hexadecimal.'),
  base64: base64Text.describe('HMAC as standard Base64 with padding.'),
  verified: z
    .boolean()
    .optional()
    .describe('Present only when expected_hex was given: whether it equals the HMAC.'),
  reason: z
    .enum(['length_mismatch', 'mismatch'])
    .optional()
    .describe(
      'Present only when verified is false: length_mismatch (expected_hex has the wrong number of digits) or mismatch.',
    ),
})

/** Result of {@link hmac}. */
export type HmacResult = z.output<typeof hmacOutput>

/**
 * HMAC (RFC 2104) of raw bytes; the tool below passes UTF-8 text, the tests use RFC 4231's
 * binary keys.
 *
 * @example hmacDigest('SHA-256', 'Jefe', 'what do ya want for nothing?').toString('hex')
 * // '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843' (RFC 4231 case 2)
 */
export function hmacDigest(
  algorithm: DigestAlgorithm,
  key: Uint8Array | string,
  message: Uint8Array | string,
): Buffer {
  return createHmac(nodeDigestName[algorithm], key).update(message).digest()
}

/** The shape check of hmac (see `ToolDefinition.check`): well-formed Unicode in input, secret. */
export const checkHmac = wellFormedFields<HmacInput>('input', 'secret')

/**
 * HMAC of UTF-8 `input` under UTF-8 `secret`, optionally verified against `expected_hex` with
 * `crypto.timingSafeEqual`. A wrong-length `expected_hex` is an answer (`length_mismatch`), not an
 * error. Neither the secret nor anything derived from it but the HMAC is returned.
 *
 * @example hmac({ input: 'msg', secret: 'k', algorithm: 'SHA-256', expected_hex: 'ab' })
 * // { ..., verified: false, reason: 'length_mismatch' }
 * @throws {ToolError} `invalid_unicode` for `input` or `secret` (the message names only the field)
 */
export function hmac(input: HmacInput): HmacResult {
  checkHmac(input)
  const digest = hmacDigest(input.algorithm, input.secret, input.input)
  const result: HmacResult = {
    algorithm: input.algorithm,
    hex: digest.toString('hex'),
    base64: digest.toString('base64'),
  }
  if (input.expected_hex === undefined) return result
  const expected = Buffer.from(input.expected_hex, 'hex')
  // Buffer stops at a bad digit, so both lengths are checked: timingSafeEqual needs equal sizes.
  if (input.expected_hex.length !== digest.length * 2 || expected.length !== digest.length) {
    return { ...result, verified: false, reason: 'length_mismatch' }
  }
  return timingSafeEqual(expected, digest)
    ? { ...result, verified: true }
    : { ...result, verified: false, reason: 'mismatch' }
}

/** Catalogue entry of the hmac tool (SPEC 4.1: POST /hmac, payload_hmac, 0.001 USDC). */
export const hmacTool: ToolDefinition<HmacInput, HmacResult> = {
  id: 'hmac',
  path: '/hmac',
  mcpName: 'payload_hmac',
  operationId: 'hmac',
  price: '1000',
  inline: true,
  title: 'HMAC',
  description:
    'HMAC-SHA-256/384/512 of a UTF-8 message under a UTF-8 secret; with expected_hex, verifies in constant time. The secret is never stored or echoed.',
  input: hmacInput,
  output: hmacOutput,
  examples: [
    { input: 'what do ya want for nothing?', secret: 'Jefe', algorithm: 'SHA-256' },
    {
      input: 'what do ya want for nothing?',
      secret: 'Jefe',
      algorithm: 'SHA-256',
      expected_hex: '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843',
    },
  ],
  limits: [
    'input: at most 1 MiB of UTF-8',
    'secret: 1 character to 64 KiB of UTF-8',
    `expected_hex: hex digits only, at most ${MAX_EXPECTED_HEX} characters`,
    'input and secret must be well-formed Unicode (no lone surrogates)',
  ],
  check: checkHmac,
  run: (input) => hmac(input),
}
