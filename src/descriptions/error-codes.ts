import { TOOL_ERROR_CODES } from '../tools/errors.js'

/**
 * Every service-level `code` with its HTTP status and meaning. Tool codes (400) are listed in
 * docs/tools.md. This table feeds docs/errors.md, OpenAPI and llms.txt, and gives
 * `describeFailure` (src/failures/) its statuses.
 */
export const SERVICE_ERROR_CODES = {
  payment_required: {
    status: 402,
    meaning: 'No payment was presented; pay one of the offered rails and retry.',
  },
  invalid_payment: {
    status: 402,
    meaning:
      'The payment could not be decoded, is over 32 KiB or its bounds, is not an x402 v2 PaymentPayload of scheme exact (no member of its own), matches none of the offered rails, or its authorization is of another amount or payee, expired, or valid for longer than maxTimeoutSeconds (the message names the field); refused before the facilitator is asked.',
  },
  payment_verification_failed: {
    status: 402,
    meaning:
      'The facilitator rejected the payment; PaymentRequired.error holds its reason (e.g. insufficient_funds).',
  },
  duplicate_settlement: {
    status: 402,
    meaning:
      'The same payment (or your own payment-identifier id) was already sent to settlement for a different call (tool or input), its settlement failed, or its replays are used up (REPLAY_LIMIT, 3 by default, in all); nothing is run or charged by this request: sign a new payment. A payment stays on record for at least 120 s and for as long as it could be presented (Solana: 300 s). The same call is otherwise replayed (200, original PAYMENT-RESPONSE). A prepaid-channel voucher taken for another call gets the corrective PaymentRequired (with the channel state): resync and sign the next voucher.',
  },
  payment_in_progress: {
    status: 409,
    meaning:
      'The same payment (or payment-identifier id) is held by a call still in progress; nothing was charged by this request. Retry after Retry-After (1 s) to get its result.',
  },
  payment_conflict: {
    status: 409,
    meaning:
      'The same authorization (EIP-3009 payer and nonce, or Solana transaction message) was already presented with another signature; nothing was verified or charged. Sign a new payment.',
  },
  payment_identifier_conflict: {
    status: 409,
    meaning:
      'The payment-identifier id is held by another payment whose payer is not yours (or your payment does not verify); the same answer whatever the tool and input, and nothing was charged. Use a new, random id.',
  },
  settlement_failed: {
    status: 402,
    meaning:
      'Settlement failed and the result is withheld, for good: the facilitator refused the settle (PAYMENT-RESPONSE holds its reason; only a retry on a rail without its RPC URL can be refused after the first attempt landed, see "Settlement in doubt"), or `errorReason` `settlement_not_landed`: a settlement in doubt that the chain shows can never land (the authorization canceled, expired unused, or its nonce used by another transfer of the payer): nothing was charged. Sign a new payment.',
  },
  invalid_request: {
    status: 400,
    meaning: 'The body does not match the tool input schema; `issues` lists JSON Pointers.',
  },
  invalid_json: { status: 400, meaning: 'The body is not valid JSON.' },
  input_check_timeout: {
    status: 400,
    meaning:
      'Checking the input (parse, schema, limits) did not finish within its time budget (TOOL_TIMEOUT_MS); nothing was charged. Send a smaller or simpler input.',
  },
  tool_timeout: {
    status: 400,
    meaning:
      'The tool did not finish within its time budget (TOOL_TIMEOUT_MS, 2 s by default) and was stopped; nothing was charged.',
  },
  payload_too_large: { status: 413, meaning: 'The body exceeds 1 MiB.' },
  not_found: { status: 404, meaning: 'No such path.' },
  method_not_allowed: {
    status: 405,
    meaning: 'The path exists but not for this method; see the Allow header.',
  },
  rate_limited: {
    status: 429,
    meaning:
      'Too many requests without money from this client (RATE_LIMIT_POINTS per RATE_LIMIT_DURATION_S, 120 per 60 s by default): every request costs a point per started 64 KiB of body before any work, a paid one too; a paid call gets its points back once its payment verifies (taken again if it then does not settle), and a settled payment adds those of its unpaid request and one more, so a client paying for what it calls is never limited. Retry after Retry-After seconds; RateLimit-Policy and RateLimit state the quota.',
  },
  facilitator_unavailable: {
    status: 503,
    meaning:
      'No facilitator is configured or it is unreachable; fail-closed, nothing was charged (the same payment may be sent again).',
  },
  settlement_unknown: {
    status: 503,
    meaning:
      'The tool ran and its settlement was sent, but how it ended is not known yet: the payment may have moved. The result is withheld and the payment held, never freed while it may still move, and never charged twice. Retry the same payment for the same input after Retry-After: the result once it landed (judged on chain with EVM_RPC_URL / SOLANA_RPC_URL), `settlement_failed` once it certainly cannot land, or `settlement_unknown` again; a retry before Retry-After is answered from the record with the seconds that remain (see "Settlement in doubt").',
  },
  overloaded: {
    status: 503,
    meaning:
      'Every tool worker is busy and the queue is full (refused before verify), or a verified call waited past its queue deadline (not run, not settled); nothing was charged. Retry after Retry-After seconds.',
  },
  guard_unavailable: {
    status: 503,
    meaning:
      'The shared duplicate-settlement guard (Redis) is unreachable or slower than REDIS_TIMEOUT_MS; fail-closed before verify, nothing ran or was charged. Retry after Retry-After.',
  },
  shutting_down: {
    status: 503,
    meaning:
      'The instance is shutting down (answered with Connection: close); nothing was run or charged. Retry.',
  },
  telemetry_unavailable: {
    status: 503,
    meaning: 'Telemetry storage is temporarily unavailable (GET /stats only).',
  },
  internal_error: { status: 500, meaning: 'An unexpected server error; nothing was charged.' },
} as const satisfies Record<string, { status: number; meaning: string }>

/** A service-level failure code. */
export type ServiceErrorCode = keyof typeof SERVICE_ERROR_CODES

/** An HTTP status a failure can come with. */
export type FailureStatus = (typeof SERVICE_ERROR_CODES)[ServiceErrorCode]['status']

/** One machine-readable failure `code` with its HTTP status and meaning. */
export interface ErrorCodeDoc {
  code: string
  /** HTTP status it comes with (MCP carries the same code in an `isError` result). */
  status: number
  meaning: string
  /** `service` for the codes of the HTTP and payment layers, else the tool id that raises it. */
  source: string
}

/**
 * The service-level codes of {@link SERVICE_ERROR_CODES}, in table order.
 *
 * @example
 * serviceErrorCodes()[0] // { code: 'payment_required', status: 402, meaning: '…', source: 'service' }
 */
export function serviceErrorCodes(): ErrorCodeDoc[] {
  return Object.entries(SERVICE_ERROR_CODES).map(([code, { status, meaning }]) => ({
    code,
    status,
    meaning,
    source: 'service',
  }))
}

/**
 * The tool codes of {@link TOOL_ERROR_CODES} (all 400), after the service codes: the complete list
 * a client can meet.
 *
 * @example
 * allErrorCodes().find((c) => c.code === 'invalid_base64')?.status // 400
 */
export function allErrorCodes(): ErrorCodeDoc[] {
  return [
    ...serviceErrorCodes(),
    ...Object.entries(TOOL_ERROR_CODES).map(([code, { tools, meaning }]) => ({
      code,
      status: 400,
      meaning,
      source: tools,
    })),
  ]
}
