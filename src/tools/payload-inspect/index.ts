import { z } from 'zod'
import { utf8Text } from '../fields.js'
import { MAX_TEXT_BYTES } from '../limits.js'
import type { ToolDefinition } from '../types.js'
import { utf8Encode, wellFormedFields } from '../unicode.js'
import {
  type Candidate,
  detectBase64,
  detectHex,
  detectJson,
  detectJwt,
  detectText,
  detectUrlEncoded,
  PAYLOAD_TYPES,
  type Probe,
  printableShare,
} from './detectors.js'

/** Request body of POST /payload-inspect (SPEC 2.2). */
export const payloadInspectInput = z
  .object({
    input: utf8Text({
      maxBytes: MAX_TEXT_BYTES,
      description:
        'Payload text to classify. Only pattern checks and JSON.parse; nothing is executed.',
    }),
  })
  .strict()

/** Parsed payload-inspect request. */
export type PayloadInspectInput = z.output<typeof payloadInspectInput>

const payloadType = z.enum(PAYLOAD_TYPES)

/** `result` of a payload-inspect call. */
export const payloadInspectOutput = z.object({
  detected: payloadType.describe('Type of the top candidate.'),
  candidates: z
    .array(
      z.object({
        type: payloadType,
        confidence: z.number().min(0).max(1).describe('Heuristic score, 2 decimals.'),
        reasons: z.array(z.string()).describe('Observations behind the score.'),
      }),
    )
    .min(1)
    .describe('Every plausible reading, highest confidence first; text is always present.'),
  length: z.number().int().min(0).describe('Length of the input in UTF-8 bytes.'),
  printable_ratio: z
    .number()
    .min(0)
    .max(1)
    .describe('Share of code points that are not control characters (4 decimals; 0 when empty).'),
  entropy_bits_per_byte: z
    .number()
    .min(0)
    .max(8)
    .describe('Shannon entropy of the UTF-8 bytes in bits per byte (4 decimals).'),
})

/** Result of {@link payloadInspect}. */
export type PayloadInspectResult = z.output<typeof payloadInspectOutput>

const round4 = (value: number) => Math.round(value * 10_000) / 10_000

/**
 * Shannon entropy of a byte string in bits per byte (0 for empty input, at most 8).
 *
 * @example shannonEntropy(new TextEncoder().encode('abab')) // 1
 */
export function shannonEntropy(bytes: Uint8Array): number {
  if (bytes.length === 0) return 0
  const counts = new Array<number>(256).fill(0)
  for (const byte of bytes) counts[byte] = (counts[byte] as number) + 1
  let entropy = 0
  for (const count of counts) {
    if (count === 0) continue
    const p = count / bytes.length
    entropy -= p * Math.log2(p)
  }
  return entropy
}

/** The shape check of payloadInspect (see `ToolDefinition.check`): well-formed Unicode in input. */
export const checkPayloadInspect = wellFormedFields<PayloadInspectInput>('input')

/**
 * Heuristic classification of a payload as JSON, JWT, Base64, hex, URL-encoded or plain text.
 * Candidates are ranked by confidence (ties by specificity: jwt, json, hex, base64, url_encoded,
 * text), so "deadbeef", valid as both hex and Base64, ranks hex first.
 *
 * @example payloadInspect({ input: 'deadbeef' }).detected // 'hex'
 * @throws {ToolError} `invalid_unicode`
 */
export function payloadInspect(input: PayloadInspectInput): PayloadInspectResult {
  checkPayloadInspect(input)
  const bytes = utf8Encode(input.input)
  const probe: Probe = {
    trimmed: input.input.trim(),
    printableRatio: printableShare(input.input),
  }
  const hex = detectHex(probe)
  const found = [
    detectJwt(probe),
    detectJson(probe),
    hex,
    detectBase64(probe, hex),
    detectUrlEncoded(probe),
    detectText(probe),
  ].filter((candidate): candidate is Candidate => candidate !== undefined)
  found.sort(
    (x, y) =>
      y.confidence - x.confidence || PAYLOAD_TYPES.indexOf(x.type) - PAYLOAD_TYPES.indexOf(y.type),
  )
  return {
    detected: (found[0] as Candidate).type,
    candidates: found,
    length: bytes.length,
    printable_ratio: round4(probe.printableRatio),
    entropy_bits_per_byte: round4(shannonEntropy(bytes)),
  }
}

/** Catalogue entry (SPEC 4.1: POST /payload-inspect, payload_inspect, 0.003 USDC). */
export const payloadInspectTool: ToolDefinition<PayloadInspectInput, PayloadInspectResult> = {
  id: 'payload-inspect',
  path: '/payload-inspect',
  mcpName: 'payload_inspect',
  operationId: 'payload_inspect',
  price: '3000',
  title: 'Payload inspect',
  description:
    'Guess what a payload is (JSON, JWT, Base64, hex, URL-encoded or text) with ranked, explained candidates, plus byte length, printable ratio and entropy. Nothing is executed.',
  input: payloadInspectInput,
  output: payloadInspectOutput,
  examples: [
    { input: 'deadbeef' },
    { input: '{"hello":"world"}' },
    { input: 'name=J%C3%BCrgen&lang=de' },
  ],
  limits: ['input: at most 1 MiB of UTF-8; well-formed Unicode (no lone surrogates)'],
  check: checkPayloadInspect,
  run: (input) => payloadInspect(input),
}
