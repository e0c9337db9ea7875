import { createHash } from 'node:crypto'
import { z } from 'zod'
import { base64Text, digestAlgorithm, lowerHex, nodeDigestName, utf8Text } from './fields.js'
import { MAX_TEXT_BYTES } from './limits.js'
import type { ToolDefinition } from './types.js'
import { utf8Encode, wellFormedFields } from './unicode.js'

/** Request body of POST /hash (SPEC 2.2). */
export const hashInput = z
  .object({
    input: utf8Text({ maxBytes: MAX_TEXT_BYTES, description: 'UTF-8 text to hash.' }).default(''),
    algorithm: digestAlgorithm.default('SHA-256').describe('SHA-2 algorithm (FIPS 180-4).'),
  })
  .strict()

/** Parsed hash request (defaults applied). */
export type HashInput = z.output<typeof hashInput>

/** `result` of a hash call. */
export const hashOutput = z.object({
  algorithm: digestAlgorithm.describe('Algorithm used.'),
  hex: lowerHex.describe('Digest as lowercase hexadecimal.'),
  base64: base64Text.describe('Digest as standard Base64 with padding (RFC 4648 section 4).'),
  input_bytes: z.number().int().min(0).describe('Number of UTF-8 bytes hashed.'),
})

/** Result of {@link hash}. */
export type HashResult = z.output<typeof hashOutput>

/** The shape check of hash (see `ToolDefinition.check`): well-formed Unicode in input. */
export const checkHash = wellFormedFields<HashInput>('input')

/**
 * SHA-2 digest of the UTF-8 bytes of `input`.
 *
 * @example
 * hash({ input: 'abc', algorithm: 'SHA-256' }).hex
 * // 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' (FIPS 180-2 B.1)
 * @throws {ToolError} `invalid_unicode` when `input` holds a lone surrogate
 */
export function hash(input: HashInput): HashResult {
  checkHash(input)
  const bytes = utf8Encode(input.input)
  const digest = createHash(nodeDigestName[input.algorithm]).update(bytes).digest()
  return {
    algorithm: input.algorithm,
    hex: digest.toString('hex'),
    base64: digest.toString('base64'),
    input_bytes: bytes.length,
  }
}

/** Catalogue entry of the hash tool (SPEC 4.1: POST /hash, payload_hash, 0.001 USDC). */
export const hashTool: ToolDefinition<HashInput, HashResult> = {
  id: 'hash',
  path: '/hash',
  mcpName: 'payload_hash',
  operationId: 'hash',
  price: '1000',
  inline: true,
  title: 'Hash',
  description:
    'SHA-256, SHA-384 or SHA-512 digest of UTF-8 text, as hex and Base64, with the byte count.',
  input: hashInput,
  output: hashOutput,
  examples: [
    { input: 'hello world', algorithm: 'SHA-256' },
    { input: 'abc', algorithm: 'SHA-512' },
  ],
  limits: ['input: at most 1 MiB of UTF-8; must be well-formed Unicode (no lone surrogates)'],
  check: checkHash,
  run: (input) => hash(input),
}
