import type { FacilitatorClient } from '@x402/core/server'
import { FacilitatorTimeoutError, SettleError, VerifyError } from '@x402/core/types'
import type { FacilitatorOperation, FacilitatorResult, FacilitatorSample } from './metrics.js'

/** How a failed facilitator request counts: a 4xx carrying a verdict is a rejection, not a fault. */
function failure(error: unknown): FacilitatorResult {
  if (error instanceof FacilitatorTimeoutError) return 'timeout'
  if ((error instanceof VerifyError || error instanceof SettleError) && error.statusCode < 500) {
    return 'rejected'
  }
  return 'error'
}

/**
 * The host of a facilitator URL (`host[:port]`): the `facilitator` label, never its path, query or
 * credentials.
 *
 * @example facilitatorHost('https://user:pw@x402.example.com/v2/') // 'x402.example.com'
 * @throws {TypeError} when `url` is not a URL
 */
export function facilitatorHost(url: string): string {
  return new URL(url).host
}

/**
 * Wraps a facilitator client so that each of its requests is timed and reported with its result
 * (see {@link FacilitatorResult}); the answers and errors pass through unchanged. The x402 SDK's
 * resource server calls the wrapper as it would the client.
 *
 * @example
 * const client = timedFacilitator(new HTTPFacilitatorClient({ url }), facilitatorHost(url),
 *   metrics.facilitatorRequest)
 */
export function timedFacilitator(
  client: FacilitatorClient,
  facilitator: string,
  record: (sample: FacilitatorSample) => void,
): FacilitatorClient {
  async function timed<T>(
    operation: FacilitatorOperation,
    request: () => Promise<T>,
    verdict: (answer: T) => FacilitatorResult,
  ): Promise<T> {
    const started = performance.now()
    const report = (result: FacilitatorResult) =>
      record({ facilitator, operation, result, seconds: (performance.now() - started) / 1000 })
    let answer: T
    try {
      answer = await request()
    } catch (error) {
      report(failure(error))
      throw error
    }
    report(verdict(answer))
    return answer
  }
  return {
    verify: (payload, requirements) =>
      timed(
        'verify',
        () => client.verify(payload, requirements),
        (r) => (r.isValid ? 'success' : 'rejected'),
      ),
    settle: (payload, requirements) =>
      timed(
        'settle',
        () => client.settle(payload, requirements),
        (r) => (r.success ? 'success' : 'rejected'),
      ),
    getSupported: () =>
      timed(
        'supported',
        () => client.getSupported(),
        () => 'success',
      ),
  }
}
