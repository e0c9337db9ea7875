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
 * No worker can take the call: HTTP 503 with `Retry-After`, code `overloaded`; nothing ran or was
 * charged.
 *
 * - `admission`: every worker is busy and the queue is full (TOOL_QUEUE_LIMIT); the call is
 *   refused before its payment is verified;
 * - `queue`: the call was admitted and verified, but waited longer than its queue deadline
 *   ({@link worstQueueWaitMs}) for a worker (many calls were verified at once); it never ran and
 *   its payment was not settled, so the same payment may be sent again.
 */
export class OverloadedError extends Error {
  override readonly name = 'OverloadedError'
  readonly code = 'overloaded'
  /**
   * @param retryAfterSeconds - when a client may retry, in seconds
   * @param stage - where the call was refused (see the class comment)
   */
  constructor(
    readonly retryAfterSeconds: number,
    readonly stage: 'admission' | 'queue' = 'admission',
  ) {
    super(
      stage === 'admission'
        ? 'The service is at capacity; nothing was verified, run or charged. Retry shortly'
        : "Every tool worker stayed busy past this call's queue deadline; it was not run and nothing was charged. Retry shortly",
    )
  }
}

/**
 * Checking a call's input (parse, schema, shape, RFC 8785 form) ran past its time budget
 * (TOOL_TIMEOUT_MS): the checker thread was stopped and replaced. HTTP 400, code
 * `input_check_timeout`; nothing was charged (the payment was verified first only when the free
 * lane could not check it). Not `tool_timeout`: the tool never ran.
 */
export class CheckTimeoutError extends Error {
  override readonly name = 'CheckTimeoutError'
  readonly code = 'input_check_timeout'
  /** @param budgetMs - the budget that ran out, in milliseconds */
  constructor(readonly budgetMs: number) {
    super(
      `The input could not be checked within its ${budgetMs} ms budget; nothing was charged. Send a smaller or simpler input`,
    )
  }
}
