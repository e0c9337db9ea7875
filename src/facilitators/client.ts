import { HTTPFacilitatorClient } from '@x402/core/server'
import {
  FacilitatorResponseError,
  type PaymentPayload,
  type PaymentRequirements,
  SettleError,
  type SettleResponse,
  VerifyError,
  type VerifyResponse,
} from '@x402/core/types'
import { z } from 'zod'
import { ENDPOINT_METHODS, type Endpoint, type FacilitatorAuth, type HeadersFor } from './auth.js'
import { type FacilitatorAnswer, postJson } from './transport.js'

const optionalText = z
  .string()
  .nullish()
  .transform((v) => v ?? undefined)
const optionalRecord = z
  .record(z.string(), z.unknown())
  .nullish()
  .transform((v) => v ?? undefined)
/** The SDK's own schema of a VerifyResponse (not exported by @x402/core 2.27). */
const verifyResponseSchema = z.object({
  isValid: z.boolean(),
  invalidReason: optionalText,
  invalidMessage: optionalText,
  payer: optionalText,
  extensions: optionalRecord,
  extra: optionalRecord,
})
/** The SDK's own schema of a SettleResponse (not exported by @x402/core 2.27). */
const settleResponseSchema = z.object({
  success: z.boolean(),
  errorReason: optionalText,
  errorMessage: optionalText,
  payer: optionalText,
  transaction: z.string(),
  network: z.custom<SettleResponse['network']>((value) => typeof value === 'string'),
  amount: optionalText,
  extensions: optionalRecord,
  extra: optionalRecord,
})

/** At most 200 characters of a facilitator's answer, whitespace collapsed, as the SDK quotes it. */
function excerpt(text: string, limit = 200): string {
  const compact = text.trim().replace(/\s+/g, ' ')
  if (!compact) return '<empty response>'
  return compact.length <= limit ? compact : `${compact.slice(0, limit - 3)}...`
}

type ClientConfig = ConstructorParameters<typeof HTTPFacilitatorClient>[0]

/** A settle's bound when neither it nor the client's `timeoutMs` is given, in milliseconds. */
const DEFAULT_SETTLE_TIMEOUT_MS = 20_000

/**
 * The SDK's `HTTPFacilitatorClient`, with verify and settle sent over node:http(s) ({@link
 * postJson}) instead of `fetch`, and the payment serialised once instead of three times; the SDK's
 * `getSupported` (every few minutes) is unchanged.
 *
 * Why: `fetch` is the largest cost of the main thread on the paid path (undici builds a Request,
 * validates its headers in JavaScript, streams and tees the body, streams the answer, and leaves
 * much garbage), and the SDK copies the PaymentPayload and the requirements through
 * `JSON.parse(JSON.stringify(…))` (its private `toJsonSafe`) before serialising them again
 * (reported upstream, docs/upstream.md).
 *
 * What it answers is the SDK's, reproduced from its 2.27 source and checked against it on the
 * same answers (client.test.ts, failures.test.ts): the request body (BigInts as strings), a 2xx
 * answer parsed with the SDK's schemas (a `FacilitatorResponseError` for JSON that is not one),
 * `EXTENSION-RESPONSES` into `extensionResponses`, a non-2xx answer holding a VerifyResponse or
 * SettleResponse as `VerifyError`/`SettleError`, any other as `Facilitator verify failed (status):
 * excerpt`, and `FacilitatorTimeoutError` past `timeoutMs`, answer included. One difference: a
 * redirect is not followed (`Facilitator settle failed (301)`), where `fetch` would follow it and
 * send the payment to another URL; both are failures of the facilitator (failures.ts).
 */
export class FacilitatorHttpClient extends HTTPFacilitatorClient {
  /** Bound of a settle request, in milliseconds: a settle waits for a block (default: `timeoutMs`). */
  readonly settleTimeoutMs: number

  constructor(config: ClientConfig, settleTimeoutMs?: number) {
    super(config)
    this.settleTimeoutMs = settleTimeoutMs ?? config?.timeoutMs ?? DEFAULT_SETTLE_TIMEOUT_MS
  }

  override async verify(
    paymentPayload: PaymentPayload,
    paymentRequirements: PaymentRequirements,
  ): Promise<VerifyResponse> {
    const answer = await this.#post('verify', paymentPayload, paymentRequirements)
    if (answer.status < 200 || answer.status > 299) {
      throw failed('verify', answer, (data) =>
        'isValid' in data ? new VerifyError(answer.status, data as VerifyResponse) : undefined,
      )
    }
    return withExtensionResponses(parsed('verify', answer, verifyResponseSchema), answer)
  }

  override async settle(
    paymentPayload: PaymentPayload,
    paymentRequirements: PaymentRequirements,
  ): Promise<SettleResponse> {
    const answer = await this.#post('settle', paymentPayload, paymentRequirements)
    if (answer.status < 200 || answer.status > 299) {
      throw failed('settle', answer, (data) =>
        'success' in data ? new SettleError(answer.status, data as SettleResponse) : undefined,
      )
    }
    return withExtensionResponses(parsed('settle', answer, settleResponseSchema), answer)
  }

  async #post(
    operation: 'verify' | 'settle',
    paymentPayload: PaymentPayload,
    paymentRequirements: PaymentRequirements,
  ): Promise<FacilitatorAnswer> {
    const { headers } = await this.createAuthHeaders(operation)
    const body = requestBody(paymentPayload, paymentRequirements)
    const timeoutMs = operation === 'settle' ? this.settleTimeoutMs : this.timeoutMs
    return postJson(new URL(`${this.url}/${operation}`), body, headers, timeoutMs, operation)
  }
}

/** The last request body made for a payment, with the requirements it was made for. */
const bodies = new WeakMap<PaymentPayload, { requirements: PaymentRequirements; body: string }>()

/**
 * The JSON body of a verify or settle request (`{x402Version, paymentPayload,
 * paymentRequirements}`), the same for both: the settle of a payment reuses the body its verify
 * made when it is given the same two objects, as `x402ResourceServer` passes them. The gate never
 * changes a payment or its requirements once presented (the SDK's hooks are handed them, and the
 * only extension registered, offer-receipt, enriches responses, not payments), and a payment that
 * echoes the bazaar declaration is several KB to serialise.
 */
function requestBody(
  paymentPayload: PaymentPayload,
  paymentRequirements: PaymentRequirements,
): string {
  const made = bodies.get(paymentPayload)
  if (made?.requirements === paymentRequirements) return made.body
  const body = requestJson({
    x402Version: paymentPayload.x402Version,
    paymentPayload,
    paymentRequirements,
  })
  bodies.set(paymentPayload, { requirements: paymentRequirements, body })
  return body
}

/**
 * The JSON of a request, BigInts as strings, as the SDK writes it. Without a replacer first: a
 * replacer makes `JSON.stringify` call back for every value; only a value that holds a BigInt
 * (which throws) is written again with it.
 */
function requestJson(value: unknown): string {
  try {
    return JSON.stringify(value)
  } catch (error) {
    if (!(error instanceof TypeError)) throw error
    return JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? v.toString() : v))
  }
}

/** The error of a non-2xx answer: the verdict `verdict` makes of its JSON, else the SDK's message. */
function failed(
  operation: 'verify' | 'settle',
  answer: FacilitatorAnswer,
  verdict: (data: object) => Error | undefined,
): Error {
  let data: unknown
  try {
    data = JSON.parse(answer.text)
  } catch {
    return new Error(`Facilitator ${operation} failed (${answer.status}): ${excerpt(answer.text)}`)
  }
  const error = typeof data === 'object' && data !== null ? verdict(data) : undefined
  return (
    error ??
    new Error(
      `Facilitator ${operation} failed (${answer.status}): ${excerpt(JSON.stringify(data))}`,
    )
  )
}

/** A 2xx answer read with the SDK's schema. */
function parsed<T>(
  operation: 'verify' | 'settle',
  answer: FacilitatorAnswer,
  schema: z.ZodType<T>,
): T {
  let data: unknown
  try {
    data = JSON.parse(answer.text)
  } catch {
    throw new FacilitatorResponseError(
      `Facilitator ${operation} returned invalid JSON: ${excerpt(answer.text)}`,
    )
  }
  const result = schema.safeParse(data)
  if (!result.success) {
    throw new FacilitatorResponseError(
      `Facilitator ${operation} returned invalid data: ${excerpt(answer.text)}`,
    )
  }
  return result.data
}

/** The facilitator's `EXTENSION-RESPONSES` header (Base64 JSON object), as `extensionResponses`. */
function withExtensionResponses<T extends object>(result: T, answer: FacilitatorAnswer): T {
  const header = answer.header('extension-responses')
  if (!header) return result
  try {
    const decoded: unknown = JSON.parse(Buffer.from(header, 'base64').toString('utf8'))
    if (decoded && typeof decoded === 'object' && !Array.isArray(decoded)) {
      Object.assign(result, { extensionResponses: decoded })
    }
  } catch {
    // The SDK ignores a header it cannot read.
  }
  return result
}

/**
 * The SDK's `HTTPFacilitatorClient`, given `createAuthHeaders` (headers keyed by endpoint, as its
 * `FacilitatorConfig` documents), and making only the headers of the endpoint being called: the
 * SDK asks `createAuthHeaders(path)` (public) for one path, but its config callback returns all
 * three, so a CDP JWT for each of verify, settle and supported would be signed on every request
 * (a signature is CPU on the paid path). Should a later SDK stop asking per path,
 * the config callback still authenticates every request.
 */
class PerEndpointAuthClient extends FacilitatorHttpClient {
  readonly #headersFor: HeadersFor

  constructor(config: ClientConfig, headersFor: HeadersFor, settleTimeoutMs?: number) {
    super(config, settleTimeoutMs)
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
  /** Bound of each verify and `/supported` request (FACILITATOR_TIMEOUT_MS), in milliseconds. */
  timeoutMs: number
  /** Bound of each settle request (FACILITATOR_SETTLE_TIMEOUT_MS); default `timeoutMs`. */
  settleTimeoutMs?: number
  auth: FacilitatorAuth
}

/**
 * An HTTP client of one facilitator, with its auth: the SDK's `HTTPFacilitatorClient` (its
 * timeout, its errors; verify and settle over node:http, {@link FacilitatorHttpClient}) with
 * `createAuthHeaders` for `cdp` and `payai`, none for `none`.
 *
 * @example
 * const client = createHttpFacilitatorClient({ url, timeoutMs: 10_000, auth: cdpAuth(url, key) })
 */
export function createHttpFacilitatorClient(
  options: HttpFacilitatorClientOptions,
): FacilitatorHttpClient {
  const { url, timeoutMs, settleTimeoutMs, auth } = options
  if (!auth.createAuthHeaders) return new FacilitatorHttpClient({ url, timeoutMs }, settleTimeoutMs)
  const config = { url, timeoutMs, createAuthHeaders: auth.createAuthHeaders }
  return auth.headersFor
    ? new PerEndpointAuthClient(config, auth.headersFor, settleTimeoutMs)
    : new FacilitatorHttpClient(config, settleTimeoutMs)
}
