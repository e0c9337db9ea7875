import { HTTPFacilitatorClient } from '@x402/core/server'
import { ENDPOINT_METHODS, type Endpoint, type FacilitatorAuth, type HeadersFor } from './auth.js'

/**
 * The SDK's `HTTPFacilitatorClient`, given `createAuthHeaders` (headers keyed by endpoint, as its
 * `FacilitatorConfig` documents), and making only the headers of the endpoint being called: the
 * SDK asks `createAuthHeaders(path)` (public) for one path, but its config callback returns all
 * three, so a CDP JWT for each of verify, settle and supported would be signed on every request
 * (an ES256 CDP JWT costs about 1 to 3 ms of CPU here). Should a later SDK stop asking per path,
 * the config callback still authenticates every request.
 */
class PerEndpointAuthClient extends HTTPFacilitatorClient {
  readonly #headersFor: HeadersFor

  constructor(
    config: ConstructorParameters<typeof HTTPFacilitatorClient>[0],
    headersFor: HeadersFor,
  ) {
    super(config)
    this.#headersFor = headersFor
  }

  override async createAuthHeaders(path: string): Promise<{ headers: Record<string, string> }> {
    if (!(path in ENDPOINT_METHODS)) return super.createAuthHeaders(path)
    return { headers: await this.#headersFor(path as Endpoint) }
  }
}

/** Options of {@link createHttpFacilitatorClient}. */
export interface HttpFacilitatorClientOptions {
  /** Base URL (`/verify`, `/settle`, `/supported` are appended). */
  url: string
  /** Bound of each request (FACILITATOR_TIMEOUT_MS), in milliseconds. */
  timeoutMs: number
  auth: FacilitatorAuth
}

/**
 * An HTTP client of one facilitator, with its auth: the SDK's `HTTPFacilitatorClient` (its
 * timeout, its errors) with `createAuthHeaders` for `cdp` and `payai`, none for `none`.
 *
 * @example
 * const client = createHttpFacilitatorClient({ url, timeoutMs: 10_000, auth: cdpAuth(url, key) })
 */
export function createHttpFacilitatorClient(
  options: HttpFacilitatorClientOptions,
): HTTPFacilitatorClient {
  const { url, timeoutMs, auth } = options
  if (!auth.createAuthHeaders) return new HTTPFacilitatorClient({ url, timeoutMs })
  const config = { url, timeoutMs, createAuthHeaders: auth.createAuthHeaders }
  return auth.headersFor
    ? new PerEndpointAuthClient(config, auth.headersFor)
    : new HTTPFacilitatorClient(config)
}
