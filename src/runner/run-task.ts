import canonicalize from 'canonicalize'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import { frame } from './framed.js'
import type { TaskOutcome, ToolTask } from './task.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * The worker side of a call: looks the tool up by id, parses its checked input and runs it with
 * the clock of the task. Never throws: the result comes back as one buffer (the SHA-256 of its
 * RFC 8785 form, then its UTF-8 JSON: `frame` in framed.ts), a `ToolError` as plain
 * data, anything else as its error name.
 *
 * @param tools - the catalogue the worker loaded, by id
 * @example
 * runTask(byId, { kind: 'run', tool: 'hash', input: encode('{"algorithm":"SHA-256","input":"abc"}'), nowSeconds: 0 })
 * // <32 bytes of SHA-256> + UTF-8 of {"algorithm":"SHA-256","hex":"ba78…",…}
 */
export function runTask(tools: ReadonlyMap<string, ToolDefinition>, task: ToolTask): TaskOutcome {
  const tool = tools.get(task.tool)
  if (!tool) return { ok: false, crash: 'UnknownTool' }
  return runToolTask(tool, task)
}

/**
 * {@link runTask} of a tool already in hand: what a worker runs, and what the calling thread runs
 * for a tool that may run inline (`ToolDefinition.inline`). Never throws.
 */
export function runToolTask(tool: ToolDefinition, task: ToolTask): TaskOutcome {
  const env = { nowSeconds: () => task.nowSeconds }
  try {
    const input: unknown = JSON.parse(decoder.decode(task.input))
    const result = tool.run(input, env)
    return frame(encoder.encode(JSON.stringify(result)), canonicalize(result) ?? '')
  } catch (error) {
    if (error instanceof ToolError) {
      return {
        ok: false,
        error: {
          code: error.code,
          message: error.message,
          ...(error.details ? { details: error.details } : {}),
        },
      }
    }
    return { ok: false, crash: error instanceof Error ? error.name : typeof error }
  }
}
