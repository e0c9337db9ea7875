import type { z } from 'zod'
import type { ToolErrorCode } from './errors.js'

/**
 * A JSON Schema (draft 2020-12) document, as plain JSON.
 */
export type JsonSchema = Record<string, unknown>

/**
 * What a tool may read from its surroundings. Tools are pure: the only ambient input they may use
 * is the clock, and only where the input itself asks for time (JWT validity).
 *
 * @example
 * const env: ToolEnv = { nowSeconds: () => 1_700_000_000 }
 */
export interface ToolEnv {
  /** Current time as whole Unix seconds. */
  nowSeconds(): number
}

/** The default environment: the system clock. */
export const systemEnv: ToolEnv = { nowSeconds: () => Math.floor(Date.now() / 1000) }

/**
 * Atomic USDC units (6 decimals) as a decimal string: "1000" is 0.001 USDC.
 */
export type AtomicUsdc = '1000' | '3000'

/**
 * One entry of the tool catalogue: everything that varies per tool. Every surface (HTTP routes,
 * MCP tools, OpenAPI, llms.txt, capabilities, bazaar, landing page) is generated from these.
 *
 * @example
 * const hash: ToolDefinition<HashInput, HashResult> = {
 *   id: 'hash', path: '/hash', mcpName: 'payload_hash', operationId: 'hash', price: '1000',
 *   title: 'Hash', description: 'SHA-2 digest of UTF-8 text.',
 *   input: hashInput, output: hashOutput, examples: [{ input: 'abc' }], limits: ['input: 1 MiB'],
 *   run: (input) => hashText(input),
 * }
 */
export interface ToolDefinition<I = unknown, O = unknown> {
  /** Stable identifier, also the HTTP path without its slash ("hash"). */
  id: string
  /** HTTP path of the paid endpoint (SPEC 4.1), e.g. "/hash". */
  path: `/${string}`
  /** MCP tool name (SPEC 4.1), e.g. "payload_hash". */
  mcpName: string
  /** OpenAPI operationId (SPEC 4.1), e.g. "hash". */
  operationId: string
  /** Price per call in atomic USDC units (6 decimals): "1000" = 0.001 USDC. */
  price: AtomicUsdc
  /** Short human title. */
  title: string
  /** One or two sentences for agents and humans. */
  description: string
  /** Zod schema of the request body. Unknown keys are rejected. */
  input: z.ZodType<I>
  /** Zod schema of `result` (the JSON Schema is generated from it). */
  output: z.ZodType<O>
  /** Example request bodies; the first is the canonical one shown in docs. */
  examples: I[]
  /** Human-readable field limits, e.g. "input: at most 1 MiB of UTF-8". */
  limits: string[]
  /**
   * The refusals that depend only on the shape of the parsed input (well-formed Unicode, nesting
   * depth, numbers within the IEEE 754 double range, sizes beyond what the schema states), run by
   * the input check before any payment is verified, so that the free `input_check` and the paid
   * call's 400 report them with their tool codes. `run` makes the same checks first, so that a
   * tool is safe on its own; both run on worker threads.
   *
   * @throws {ToolError} with the code of the refusal (docs/errors.md "Tool codes")
   */
  check(input: I): void
  /**
   * True for a tool whose work grows linearly with its input, with no step that can backtrack or
   * multiply (hashing, HMAC, Base64): a call whose checked input is small enough
   * (`INLINE_RUN_BYTES`) then runs on the calling thread, as its input check did, rather than on
   * a worker. Absent: always on a worker, under the time budget.
   */
  inline?: true
  /**
   * Runs the tool. Pure: same input and env, same output.
   *
   * @throws {ToolError} for any input the tool cannot process (mapped to HTTP 400).
   */
  run(input: I, env: ToolEnv): O
}

/**
 * A tool could not process its input. Always maps to HTTP 400 (or an MCP `isError` result) with
 * the machine-readable `code`; the call is never settled.
 *
 * @example
 * throw new ToolError('invalid_base64', 'Invalid character "*" at offset 3', { offset: 3 })
 */
export class ToolError extends Error {
  override readonly name = 'ToolError'

  /**
   * @param code - machine-readable code from {@link TOOL_ERROR_CODES} (src/tools/errors.ts)
   * @param message - human-readable explanation; never echoes secrets
   * @param details - optional JSON details (offsets, step index, keyword name)
   */
  constructor(
    readonly code: ToolErrorCode,
    message: string,
    readonly details?: Record<string, unknown>,
  ) {
    super(message)
  }
}
