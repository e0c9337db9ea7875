import { z } from 'zod'
import { encodeBase64, encodeHex } from '../codec/rfc4648.js'
import { lowerHex } from '../fields.js'
import { inspectJson } from '../json-value.js'
import { MAX_JSON_DEPTH, MAX_TEXT_BYTES, MiB } from '../limits.js'
import { type ToolDefinition, ToolError } from '../types.js'
import { utf8DecodeStrict, utf8Encode, utf8Length } from '../unicode.js'
import { OPERATION_TYPES, operations } from './ops.js'
import { canonicalBytes, type PipelineValue } from './value.js'

/** Most operations per call (SPEC 8). */
export const MAX_OPERATIONS = 12

/** Largest value between two steps (bytes, or the canonical form of a JSON value). */
export const MAX_INTERMEDIATE_BYTES = 4 * MiB

/** Request body of POST /pipeline (SPEC 2.2). */
export const pipelineInput = z
  .object({
    input: z
      .unknown()
      .refine((value) => typeof value !== 'string' || utf8Length(value) <= MAX_TEXT_BYTES, {
        message: 'a string input must be at most 1 MiB of UTF-8',
      })
      .describe(
        'Initial value: a string is taken as its UTF-8 bytes; any other JSON value stays a JSON value.',
      ),
    operations: z
      .array(
        z
          .object({
            type: z.enum(OPERATION_TYPES).describe('Operation applied to the current value.'),
          })
          .strict(),
      )
      .min(1)
      .max(MAX_OPERATIONS)
      .describe(`1 to ${MAX_OPERATIONS} operations, applied in order.`),
  })
  .strict()

/** Parsed pipeline request. */
export type PipelineInput = z.output<typeof pipelineInput>

const valueType = z.enum(['bytes', 'json'])
const step = z.object({
  op: z.enum(OPERATION_TYPES),
  in_type: valueType.describe('Type of the value the step received.'),
  out_type: valueType.describe('Type of the value the step produced.'),
  bytes_out: z
    .number()
    .int()
    .min(0)
    .describe('Size of the output in bytes (a JSON value: its RFC 8785 canonical UTF-8 form).'),
  coerced: z
    .literal(true)
    .optional()
    .describe(
      'Present when the input was converted first: a JSON value canonicalised to bytes, or bytes parsed as JSON.',
    ),
})

/** `result` of a pipeline call: the final value by its type, and one entry per step. */
export const pipelineOutput = z.discriminatedUnion('output_type', [
  z.object({
    output_type: z.literal('text'),
    output: z.string().describe('Final bytes as UTF-8 text.'),
    steps: z.array(step),
  }),
  z.object({
    output_type: z.literal('binary'),
    output: z.string().describe('Final bytes (not valid UTF-8) as standard Base64.'),
    output_hex: lowerHex.describe('Final bytes as lowercase hex.'),
    steps: z.array(step),
  }),
  z.object({
    output_type: z.literal('json'),
    output: z.unknown().describe('Final JSON value.'),
    steps: z.array(step),
  }),
])

/** Result of {@link pipeline}. */
export type PipelineResult = z.output<typeof pipelineOutput>
type Step = z.output<typeof step>

function sizeOf(value: PipelineValue): number {
  return value.kind === 'bytes' ? value.bytes.length : canonicalBytes(value.value).length
}

/**
 * The shape check of pipeline (see `ToolDefinition.check`): `input` is well-formed Unicode, nested
 * at most 128 levels, with numbers within the IEEE 754 double range.
 *
 * @throws {ToolError} `invalid_unicode`, `input_too_deep`, `number_out_of_range`
 */
export function checkPipeline(input: PipelineInput): void {
  inspectJson(input.input, { field: '/input', maxDepth: MAX_JSON_DEPTH, tooDeep: 'input_too_deep' })
}

/**
 * Applies up to 12 byte/JSON operations in order. A string input is its UTF-8 bytes, any other
 * input a JSON value; a byte operation on a JSON value canonicalises it first (RFC 8785) and
 * marks the step `coerced`. Decoders are strict and their errors name the step and offset.
 *
 * @example pipeline({ input: 'foobar', operations: [{ type: 'base64_encode' }, { type: 'hex_encode' }] })
 * // { output_type: 'text', output: '5a6d3976596d4679', steps: [...] }
 * @throws {ToolError} `invalid_unicode`, `input_too_deep`, `number_out_of_range`, and with
 *   `{ step, op }` in details: `invalid_base64`, `invalid_hex`, `invalid_url_encoding` (plus
 *   `offset`), `json_parse_failed`, `json_too_deep`, `number_out_of_range`,
 *   `intermediate_too_large`
 */
export function pipeline(input: PipelineInput): PipelineResult {
  checkPipeline(input)
  let current: PipelineValue =
    typeof input.input === 'string'
      ? { kind: 'bytes', bytes: utf8Encode(input.input) }
      : { kind: 'json', value: input.input }
  const steps: Step[] = []
  input.operations.forEach(({ type }, index) => {
    const operation = operations[type]
    const inType = current.kind
    const where = `operations[${index}] (${type})`
    let next: PipelineValue
    let size: number
    try {
      next = operation.apply(current)
      size = sizeOf(next)
    } catch (error) {
      if (!(error instanceof ToolError)) throw error
      throw new ToolError(error.code, `${where}: ${error.message}`, {
        ...error.details,
        step: index,
        op: type,
      })
    }
    if (size > MAX_INTERMEDIATE_BYTES) {
      throw new ToolError(
        'intermediate_too_large',
        `${where}: the result is ${size} bytes; the limit is ${MAX_INTERMEDIATE_BYTES}`,
        { step: index, op: type, size, limit: MAX_INTERMEDIATE_BYTES },
      )
    }
    steps.push({
      op: type,
      in_type: inType,
      out_type: next.kind,
      bytes_out: size,
      ...(operation.input !== inType ? { coerced: true as const } : {}),
    })
    current = next
  })
  if (current.kind === 'json') return { output_type: 'json', output: current.value, steps }
  const text = utf8DecodeStrict(current.bytes)
  if (text !== null) return { output_type: 'text', output: text, steps }
  return {
    output_type: 'binary',
    output: encodeBase64(current.bytes),
    output_hex: encodeHex(current.bytes),
    steps,
  }
}

/** Catalogue entry (SPEC 4.1: POST /pipeline, payload_pipeline, 0.003 USDC). */
export const pipelineTool: ToolDefinition<PipelineInput, PipelineResult> = {
  id: 'pipeline',
  path: '/pipeline',
  mcpName: 'payload_pipeline',
  operationId: 'pipeline',
  price: '3000',
  title: 'Transformation pipeline',
  description:
    'Chain 1 to 12 operations (Base64, hex and URL encode/decode, JSON parse, RFC 8785 canonicalize, SHA-256/512) over text, bytes or JSON, with per-step types and sizes.',
  input: pipelineInput,
  output: pipelineOutput,
  examples: [
    {
      input: { b: 2, a: [1, 'x'] },
      operations: [{ type: 'json_canonicalize' }, { type: 'sha256' }],
    },
    {
      input: 'eyJoZWxsbyI6IndvcmxkIn0',
      operations: [{ type: 'base64_decode' }, { type: 'json_parse' }],
    },
  ],
  limits: [
    `operations: 1 to ${MAX_OPERATIONS}`,
    'input: a string at most 1 MiB of UTF-8; JSON nested at most 128 levels; well-formed Unicode',
    `every intermediate value: at most ${MAX_INTERMEDIATE_BYTES / MiB} MiB`,
  ],
  check: checkPipeline,
  run: (input) => pipeline(input),
}
