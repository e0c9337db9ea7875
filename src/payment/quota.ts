/**
 * The caller's rate-limit account (src/http/rate-limit.ts), as the payment gate and the MCP
 * endpoint use it. Work on what a client sent without money is charged before it starts, in
 * proportion to its size ({@link requestPoints}); a paid call's own points are given back once its
 * payment verifies, and taken again if it then ends without a settlement; a settled payment adds
 * a credit ({@link settledCredit}).
 */
export interface ClientQuota {
  /**
   * Takes `points` (default 1).
   *
   * @throws the rate limiter's refusal (`RateLimitedError`, 429) when the client is over its limit
   */
  charge(points?: number): Promise<void>
  /**
   * Gives `points` back, below zero too: a credit until the window ends. Never refuses, never
   * throws, not awaited.
   */
  refund(points: number): void
  /**
   * Takes `points` without refusing (the next request over the limit is refused): points given
   * back at verify, for a call that then did not settle. Never throws, not awaited.
   */
  takeBack(points: number): void
}

/** Bytes of a request body that one rate-limit point pays for (64 KiB). */
export const BYTES_PER_POINT = 64 * 1024

/**
 * Rate-limit points of the work on a request body of `bytes`: one per started 64 KiB, at least
 * one, so that parsing and checking 1 MiB costs a client 16 requests' worth.
 *
 * @example requestPoints(0) // 1
 * @example requestPoints(1024 * 1024) // 16
 */
export function requestPoints(bytes: number): number {
  return Math.max(1, Math.ceil(bytes / BYTES_PER_POINT))
}

/**
 * The credit of a settled payment, besides the points of its own request (given back at verify):
 * the first point of its unpaid request (every x402 client reads the 402 before it signs) and one
 * more, so that a client paying for what it calls is never limited by its paid traffic, at any
 * rate, over HTTP or MCP (where `initialize` and `tools/list` cost a point each per session).
 * {@link settledCredit} adds the rest of the unpaid request's points, those of its size. Only a
 * settled payment earns it: money moved. The credit lasts until the window ends.
 */
export const SETTLED_PAYMENT_REWARD = 2

/**
 * Points a settled payment credits its client for a paid request that was charged `charged`
 * points: the unpaid request of the same body (its 402, `charged` points: the paid request's
 * body over HTTP is the unpaid one's; over MCP it is the same arguments with the payment added,
 * never smaller) and one more, i.e. `charged - 1 + SETTLED_PAYMENT_REWARD`. With it, the unpaid
 * probe and the paid request of an x402 client cost it nothing net, whatever their size.
 *
 * @example settledCredit(1) // 2: the 402's point and one more
 * @example settledCredit(16) // 17: a 1 MiB body's 402 (16 points) and one more
 * @example settledCredit(0) // 2: a paid call inside an MCP batch (its points were the batch's)
 */
export function settledCredit(charged: number): number {
  return Math.max(0, charged - 1) + SETTLED_PAYMENT_REWARD
}

/**
 * Takes a paid call's points before any work on it: one per started 64 KiB of its body
 * ({@link requestPoints}), unless its transport took them already (`prepaid`: MCP charges its
 * body before reading it).
 *
 * @returns the points the call cost, given back once its payment verifies
 * @throws the quota's refusal (429), before anything of the call is read
 * @example outcome.charged = await chargeBefore(call)
 */
export async function chargeBefore(call: {
  prepaid?: number
  source?: { body: Uint8Array }
  quota?: ClientQuota
}): Promise<number> {
  if (call.prepaid !== undefined) return call.prepaid
  const points = requestPoints(call.source?.body.length ?? 0)
  await call.quota?.charge(points)
  return points
}
