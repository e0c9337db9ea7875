import type { Context, Hono } from 'hono'
import type { ClientQuota, PaymentGate } from '../payment/gate.js'
import type { ToolDefinition } from '../tools/types.js'
import { toHttpFailure } from './failures.js'
import { settlementHeader } from './headers.js'
import { requestIdHeader } from './request-id.js'

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
  /**
   * The headers every response of the app carries (security and CORS: `recordFor` of
   * `precomputedHeaders` in security.ts), which the paid routes' own Responses must carry too;
   * none when absent.
   */
  responseHeaders?: (c: Context) => Promise<Readonly<Record<string, string>>>
  /**
   * Whether the prepaid channels' refund flow is served on `GET <tool.path>` now (the official
   * `batch-settlement` client probes and refunds with GET): unpaid, the tool's 402; with a refund
   * voucher, the refund. Nothing else is served on GET, and while it answers false (or absent)
   * GET is refused 405 as any method but POST.
   */
  refunds?: () => boolean
}

/**
 * A Response with plain-object headers, which @hono/node-server writes with `writeHead` as they
 * are: through Hono's `c.json` every header would go into an undici `Headers`, which checks each
 * character of the large `PAYMENT-REQUIRED` in JavaScript. The app sets no header before these
 * handlers (`selfServed` in security.ts): `common` carries its own.
 */
function plainResponse(
  body: string | Uint8Array<ArrayBuffer>,
  status: number,
  common: Readonly<Record<string, string>>,
  headers: Record<string, string>,
): Response {
  return new Response(body, {
    status,
    headers: { ...common, 'content-type': 'application/json', ...headers },
  })
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

/** The same headers with lower-case names, so that none is written twice in two spellings. */
function lowerCased(headers: Record<string, string>): Record<string, string> {
  const lower: Record<string, string> = {}
  for (const [name, value] of Object.entries(headers)) lower[name.toLowerCase()] = value
  return lower
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
  const none: Readonly<Record<string, string>> = {}
  const common = options.responseHeaders ?? (async () => none)
  for (const tool of options.tools) {
    const resource = {
      url: `${options.publicBaseUrl}${tool.path}`,
      description: tool.description,
      mimeType: 'application/json',
    }
    const extensions = options.extensionsFor?.(tool)
    app.post(tool.path, async (c) => {
      const header = c.req.header('PAYMENT-SIGNATURE')
      try {
        const body = new Uint8Array(await c.req.arrayBuffer())
        const { result, settlement } = await gate.execute({
          tool,
          transport: 'http',
          ...(body.length > 0 ? { source: { body } } : {}),
          ...(header !== undefined ? { payment: { header } } : {}),
          resource,
          ...(extensions ? { extensions } : {}),
          ...(options.quotaOf ? { quota: options.quotaOf(c) } : {}),
        })
        return plainResponse(successBody(result.bytes), 200, await common(c), {
          ...requestIdHeader(c),
          'payment-response': settlementHeader(settlement),
          'cache-control': 'no-store',
        })
      } catch (error) {
        const failure = toHttpFailure(error)
        return plainResponse(JSON.stringify(failure.body), failure.status, await common(c), {
          ...requestIdHeader(c),
          ...lowerCased(failure.headers),
        })
      }
    })
    const refunds = options.refunds
    // A middleware, not a GET route: the route table's `Allow` stays POST while refunds are off.
    if (refunds) {
      app.use(tool.path, async (c, next) => {
        if (c.req.method !== 'GET' || !refunds()) return next()
        const header = c.req.header('PAYMENT-SIGNATURE')
        const call = {
          tool,
          transport: 'http' as const,
          resource,
          ...(extensions ? { extensions } : {}),
        }
        try {
          // Unpaid: the tool's 402, which the refund flow reads its channel offer from.
          if (header === undefined) await gate.execute(call)
          const settlement = await gate.refund({ ...call, payment: { header: header as string } })
          const body = {
            ok: true,
            result: {
              refunded: true,
              transaction: settlement.transaction,
              network: settlement.network,
            },
          }
          return plainResponse(JSON.stringify(body), 200, await common(c), {
            ...requestIdHeader(c),
            'payment-response': settlementHeader(settlement),
            'cache-control': 'no-store',
          })
        } catch (error) {
          const failure = toHttpFailure(error)
          return plainResponse(JSON.stringify(failure.body), failure.status, await common(c), {
            ...requestIdHeader(c),
            ...lowerCased(failure.headers),
          })
        }
      })
    }
  }
}
