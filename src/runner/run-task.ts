import { type ToolDefinition, ToolError } from '../tools/types.js'
import type { TaskOutcome, ToolTask } from './task.js'

const encoder = new TextEncoder()
const decoder = new TextDecoder()

/**
 * The worker side of a call: looks the tool up by id, parses its input and runs it with the clock
 * of the task. Never throws: the result comes back as UTF-8 JSON, a `ToolError` as plain data,
 * anything else as its error name.
 *
 * @param tools - the catalogue the worker loaded, by id
 * @example
 * runTask(byId, { tool: 'hash', input: encode('{"input":"abc","algorithm":"SHA-256"}'), nowSeconds: 0 })
 * // UTF-8 of {"algorithm":"SHA-256","hex":"ba78…",…}
 */
export function runTask(tools: ReadonlyMap<string, ToolDefinition>, task: ToolTask): TaskOutcome {
  const tool = tools.get(task.tool)
  if (!tool) return { ok: false, crash: 'UnknownTool' }
  const env = { nowSeconds: () => task.nowSeconds }
  try {
    const input: unknown = JSON.parse(decoder.decode(task.input))
    return encoder.encode(JSON.stringify(tool.run(input, env)))
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
