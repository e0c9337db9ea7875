/**
 * The tool did not finish within its time budget (TOOL_TIMEOUT_MS): its worker was terminated and
 * replaced. HTTP 400 (MCP: an `isError` result), code `tool_timeout`; the payment is never settled.
 */
export class ToolTimeoutError extends Error {
  override readonly name = 'ToolTimeoutError'
  readonly code = 'tool_timeout'
  /** @param budgetMs - the budget that ran out, in milliseconds */
  constructor(readonly budgetMs: number) {
    super(
      `The tool did not finish within its ${budgetMs} ms budget and was stopped; nothing was charged`,
    )
  }
}

/**
 * Every worker is busy and the queue is full (TOOL_QUEUE_LIMIT): the call is refused before the
 * payment is verified. HTTP 503 with `Retry-After`, code `overloaded`; nothing ran or was charged.
 */
export class OverloadedError extends Error {
  override readonly name = 'OverloadedError'
  readonly code = 'overloaded'
  /** @param retryAfterSeconds - when a client may retry, in seconds */
  constructor(readonly retryAfterSeconds: number) {
    super('The service is at capacity; nothing was verified, run or charged. Retry shortly')
  }
}
