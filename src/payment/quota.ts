/**
 * The caller's rate-limit account (src/http/rate-limit.ts), as the payment gate and the MCP
 * endpoint use it. Work on what a client sent without money is charged before it starts, in
 * proportion to its size ({@link requestPoints}); a settled payment gives back what its call was
 * charged, and a credit.
 */
export interface ClientQuota {
  /**
   * Takes `points` (default 1).
   *
   * @throws the rate limiter's refusal (`RateLimitedError`, 429) when the client is over its limit
   */
  charge(points?: number): Promise<void>
  /**
   * A payment of this client settled: gives back `refund` points (what its call was charged) and
   * the credit of a settled payment.
   */
  reward(refund?: number): void
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
 * Takes a paid call's points before any work on it: one per started 64 KiB of its body
 * ({@link requestPoints}), unless its transport took them already (`prepaid`: MCP charges its
 * body before reading it).
 *
 * @returns the points the call cost, given back if its payment settles
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
