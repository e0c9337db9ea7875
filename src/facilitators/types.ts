// The facilitators' shared vocabulary: what the router reports and what the payment link reads.

/**
 * How a facilitator authenticates our requests (FACILITATOR_AUTH): `none`; `cdp`, a CDP JWT per
 * request (CDP_API_KEY_ID, CDP_API_KEY_SECRET); `payai`, a PayAI API-key JWT (PAYAI_API_KEY_ID,
 * PAYAI_API_KEY_SECRET).
 */
export type FacilitatorAuthMode = 'none' | 'cdp' | 'payai'

/**
 * State of one facilitator:
 * - `unknown`: not asked yet;
 * - `ok`: it answers, and none of its recent calls failed;
 * - `degraded`: it answers, but some of its recent calls (verify, settle, `/supported`) failed or
 *   timed out;
 * - `down`: its last call failed (refused, 5xx, timeout…): calls go to the next facilitator that
 *   offers the rail until a `/supported` answers again;
 * - `unauthorized`: it answered 401 or 403 (credentials missing, wrong or revoked); also skipped.
 */
export type FacilitatorState = 'unknown' | 'ok' | 'degraded' | 'down' | 'unauthorized'

/**
 * One facilitator as `/health` shows it: the host of its URL only (never the path or a
 * credential), and short reasons (`ECONNREFUSED`, `timeout`, `HTTP 503`), never response text.
 */
export interface FacilitatorReport {
  /** Host (and port) of its URL, e.g. `api.cdp.coinbase.com`. */
  host: string
  auth: FacilitatorAuthMode
  state: FacilitatorState
  /** CAIP-2 networks its last `/supported` lists (any scheme or version), sorted. */
  networks: string[]
  /** Epoch ms of its last successful call. */
  lastOkAt?: number
  /** Short reason of its last failure while it is not `ok`. */
  lastError?: string
  /**
   * Its calls (verify, settle, `/supported`) in the last `windowSeconds`: all, failed (refused,
   * 5xx, 401/403, malformed answers, timeouts) and, among those, timed out. A facilitator's
   * verdict on a payment (`isValid: false`, a 4xx SettleResponse) is an answer, not a failure.
   */
  recent: { windowSeconds: number; calls: number; failures: number; timeouts: number }
}

/**
 * What the router tells the payment link on top of `FacilitatorClient`. A plain
 * `FacilitatorClient` (tests) is one facilitator without reports.
 */
export interface FacilitatorRoutes {
  /** Each configured facilitator, in order of preference. */
  reports(): FacilitatorReport[]
  /**
   * Changes whenever which facilitator serves a network may change (one went down or came back,
   * or its `/supported` changed): the link then rebuilds its offers, since a Solana offer names
   * the serving facilitator's fee payer.
   */
  revision(): number
  /** Whether a facilitator's `/supported` is due for a re-read (stale, or down and due a retry). */
  probeDue(): boolean
  /** Host of the facilitator that serves `network` (x402 v2, `exact`) right now, if any. */
  servedBy(network: string): string | undefined
}
