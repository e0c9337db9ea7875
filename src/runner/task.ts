import type { ToolErrorCode } from '../tools/errors.js'

/**
 * One tool call as posted to a worker: the tool id, its parsed input (defaults applied) as UTF-8
 * JSON in a buffer the worker receives without a copy, and the clock, read on the main thread so
 * that a test's fixed clock reaches the worker.
 *
 * Bytes rather than the value: the structured clone of a 1 MiB string costs the main thread about
 * 10 ms here, `JSON.stringify` and `TextEncoder` a fraction of that, and the transfer nothing.
 *
 * @example { tool: 'hash', input: <UTF-8 of {"input":"abc","algorithm":"SHA-256"}>, nowSeconds: 1700000000 }
 */
export interface ToolTask {
  /** `ToolDefinition.id` in the catalogue the worker loaded. */
  tool: string
  /** UTF-8 JSON of the parsed input; its buffer is transferred. */
  input: Uint8Array
  /** The tools' clock (`ToolEnv.nowSeconds`) for this call, in whole Unix seconds. */
  nowSeconds: number
}

/** A `ToolError` as plain data: error classes do not survive the structured clone. */
export interface ToolErrorData {
  code: ToolErrorCode
  message: string
  details?: Record<string, unknown>
}

/**
 * What a worker answers: the result as UTF-8 JSON (its buffer transferred), the tool's refusal (a
 * `ToolError`), or the name of anything else the tool threw (a bug; its message may quote the
 * input, so only the name travels).
 */
export type TaskOutcome =
  | Uint8Array
  | { ok: false; error: ToolErrorData }
  | { ok: false; crash: string }

/** The warm-up task: a worker answers it with `null` once it has loaded the tools. */
export const PING = 'ping'

/** What the runner posts to a worker. */
export type WorkerTask = ToolTask | typeof PING
