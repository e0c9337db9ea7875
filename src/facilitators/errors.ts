/**
 * No facilitator is configured, or it is unreachable, failing, or too slow. HTTP 503, code
 * `facilitator_unavailable`. Fail-closed: no tool runs, and nothing is settled by us.
 */
export class FacilitatorUnavailableError extends Error {
  override readonly name = 'FacilitatorUnavailableError'
  readonly code = 'facilitator_unavailable'
}
