import { decodePaymentSignatureHeader } from '@x402/core/http'
import type { Context, Hono } from 'hono'
import { type ClientQuota, MAX_PAYMENT_BYTES, type PaymentGate } from '../payment/gate.js'
import type { ToolDefinition } from '../tools/types.js'
import { toHttpFailure } from './failures.js'
import { settlementHeader } from './headers.js'

/** Options of {@link registerPaidRoutes}. */
export interface PaidRoutesOptions {
  gate: PaymentGate
  tools: readonly ToolDefinition[]
  /** Base URL for `resource.url`, without trailing slash. */
  publicBaseUrl: string
  /** PaymentRequired extensions per tool (bazaar discovery info), if any. */
  extensionsFor?: (tool: ToolDefinition) => Record<string, unknown> | undefined
  /** The caller's rate-limit account (src/http/rate-limit.ts); absent: no rate limit. */
  quotaOf?: (c: Context) => ClientQuota
}

const SUCCESS_HEAD = new TextEncoder().encode('{"ok":true,"result":')
const SUCCESS_TAIL = new TextEncoder().encode('}')

/**
 * The 200 body `{"ok":true,"result":…}` around the result JSON the worker made, without parsing it:
 * a result of megabytes costs the event loop one copy.
 */
function successBody(result: Uint8Array): Uint8Array<ArrayBuffer> {
  const body = new Uint8Array(SUCCESS_HEAD.length + result.length + SUCCESS_TAIL.length)
  body.set(SUCCESS_HEAD, 0)
  body.set(result, SUCCESS_HEAD.length)
  body.set(SUCCESS_TAIL, SUCCESS_HEAD.length + result.length)
  return body
}

/** A `PAYMENT-SIGNATURE` as read: absent, decoded (not yet validated), or why it cannot be read. */
type PresentedPayment =
  | { payment: unknown; problem?: undefined }
  | { payment: null; problem: string }

/**
 * `PAYMENT-SIGNATURE` -> decoded PaymentPayload JSON. The length is checked before decoding
 * (the server accepts 128 KiB of headers, so that this answer, not a bare 431, reaches a client
 * that sends too much).
 */
function readPayment(c: Context): PresentedPayment {
  const header = c.req.header('PAYMENT-SIGNATURE')
  if (header === undefined) return { payment: undefined }
  if (header.length > MAX_PAYMENT_BYTES) {
    return {
      payment: null,
      problem: `PAYMENT-SIGNATURE is ${header.length} bytes; the limit is ${MAX_PAYMENT_BYTES / 1024} KiB`,
    }
  }
  const text = header.trim()
  try {
    return { payment: decodePaymentSignatureHeader(text) }
  } catch {
    // The SDK decoder checks the alphabet, then JSON.parses: tell the client which step failed.
    const base64 = /^[A-Za-z0-9+/]*={0,2}$/.test(text)
    return {
      payment: null,
      problem: base64
        ? 'PAYMENT-SIGNATURE is Base64, but not of a JSON PaymentPayload'
        : 'PAYMENT-SIGNATURE is not Base64 (RFC 4648 section 4)',
    }
  }
}

/**
 * Registers `POST <tool.path>` for every catalogue entry (SPEC 4.1): 402 -> pay -> 200.
 *
 * - unpaid: 402 with `PAYMENT-REQUIRED` before any body validation (crawlers probe with empty
 *   bodies); a body that came along is checked for free (`input_check`);
 * - paid with a malformed or invalid body: 400, and the facilitator is never called;
 * - paid and valid: verify, run, settle, then 200 `{ok: true, result}` with `PAYMENT-RESPONSE`.
 *
 * The body is read as bytes and handed to the gate as they are: it is parsed and checked on a
 * worker thread (the runner's input check), never on the thread that serves requests.
 *
 * @example
 * registerPaidRoutes(app, { gate, tools: catalog, publicBaseUrl: 'https://tools.example' })
 */
export function registerPaidRoutes(app: Hono, options: PaidRoutesOptions): void {
  const { gate } = options
  for (const tool of options.tools) {
    const resource = {
      url: `${options.publicBaseUrl}${tool.path}`,
      description: tool.description,
      mimeType: 'application/json',
    }
    const extensions = options.extensionsFor?.(tool)
    app.post(tool.path, async (c) => {
      const { payment, problem } = readPayment(c)
      try {
        const body = new Uint8Array(await c.req.arrayBuffer())
        const { result, settlement } = await gate.execute({
          tool,
          transport: 'http',
          ...(body.length > 0 ? { source: { body } } : {}),
          payment,
          resource,
          ...(problem !== undefined ? { paymentProblem: problem } : {}),
          ...(extensions ? { extensions } : {}),
          ...(options.quotaOf ? { quota: options.quotaOf(c) } : {}),
        })
        c.header('PAYMENT-RESPONSE', settlementHeader(settlement))
        c.header('Cache-Control', 'no-store')
        c.header('Content-Type', 'application/json')
        return c.body(successBody(result.bytes), 200)
      } catch (error) {
        const failure = toHttpFailure(error)
        return c.json(failure.body, failure.status, failure.headers)
      }
    })
  }
}
