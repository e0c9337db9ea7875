import { type ToolDefinition, ToolError } from '../tools/types.js'
import type { TaskOutcome, ToolTask } from './task.js'

/**
 * The worker side of a call: looks the tool up by id and runs it with the clock of the task.
 * Never throws: a `ToolError` comes back as plain data, anything else as its error name.
 *
 * @param tools - the catalogue the worker loaded, by id
 * @example
 * runTask(byId, { tool: 'hash', input: { input: 'abc', algorithm: 'SHA-256' }, nowSeconds: 0 })
 * // { ok: true, result: { algorithm: 'SHA-256', hex: 'ba78…', … } }
 */
export function runTask(tools: ReadonlyMap<string, ToolDefinition>, task: ToolTask): TaskOutcome {
  const tool = tools.get(task.tool)
  if (!tool) return { ok: false, crash: 'UnknownTool' }
  const env = { nowSeconds: () => task.nowSeconds }
  try {
    return { ok: true, result: tool.run(task.input, env) }
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
