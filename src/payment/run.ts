import { logger } from '../logger.js'
import { OverloadedError, ToolTimeoutError } from '../runner/errors.js'
import { ToolError } from '../tools/types.js'
import type { GateParts, PaidContext, Ran } from './call.js'
import { ShuttingDownError } from './errors.js'

/**
 * Runs the call's tool on a worker under its time budget, on the clock read here, then checks
 * that a settlement may still start (shutdown).
 *
 * @throws {ToolError} the tool's refusal, or `tool_failed` for anything unexpected
 * @throws {ToolTimeoutError} or {OverloadedError} from the runner: nothing is settled
 * @throws {ShuttingDownError} the service could no longer settle it in time
 * @example const { result, nowSeconds } = await runTool(parts, ctx)
 */
export async function runTool(parts: GateParts, ctx: PaidContext): Promise<Ran> {
  try {
    const nowSeconds = parts.env.nowSeconds()
    const result = await ctx.admission.run(ctx.call.tool, ctx.checked, nowSeconds)
    if (!parts.canSettle()) {
      throw new ShuttingDownError(
        'The service is shutting down and could not settle this call in time; nothing was charged',
      )
    }
    return { result, nowSeconds }
  } catch (error) {
    if (
      error instanceof ToolError ||
      error instanceof ToolTimeoutError ||
      error instanceof OverloadedError ||
      error instanceof ShuttingDownError
    ) {
      throw error
    }
    // The name only: a message may quote the input.
    logger.error(
      { tool: ctx.call.tool.id, err: error instanceof Error ? error.name : typeof error },
      'tool threw an unexpected error',
    )
    throw new ToolError('tool_failed', 'The tool failed on this input; nothing was charged')
  }
}
