import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage } from 'node:http'
import type { AddressInfo } from 'node:net'
import { getRequestListener } from '@hono/node-server'
import type { x402Facilitator } from '@x402/core/facilitator'
import { isPaymentPayload, isPaymentRequirements } from '@x402/core/schemas'
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types'
import canonicalize from 'canonicalize'
import { type Context, Hono } from 'hono'
import { logger } from '../logger.js'
import { type DevFacilitatorAuth, refusal } from './facilitator-auth.js'

/** A facilitator listening on HTTP. */
export interface FacilitatorServer {
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:40123`; give it to `HTTPFacilitatorClient`. */
  url: string
  /** Closes the listener and every open connection; later requests are refused. Idempotent. */
  stop(): Promise<void>
}

/** Options of {@link createFacilitatorApp}. */
export interface FacilitatorAppOptions {
  /** Counts every request by endpoint, so tests can see that /settle was never called. */
  counts?: FacilitatorRequestCounts
  /** Requires an API-key JWT on every request, checked as CDP (or PayAI) does; else 401. */
  auth?: DevFacilitatorAuth
  /** Serves the API under this path, e.g. `/platform/v2/x402` as CDP does (default: at the root). */
  basePath?: string
  /** Faults a test switches on and off while the server runs. */
  faults?: FacilitatorFaults
  /** Every verify and settle that ran, appended when it ran (before its answer, sent or lost). */
  received?: FacilitatorReceived[]
}

export interface FacilitatorServerOptions extends FacilitatorAppOptions {
  /** TCP port; default 0 (the OS picks a free one). */
  port?: number
  /** Interface; default `127.0.0.1`. */
  host?: string
}

/** Faults of a devnet facilitator, read on every request. */
export interface FacilitatorFaults {
  /**
   * Milliseconds to wait before settling: longer than the client's timeout, the settle still
   * lands after the client gave up (the "outcome unknown" case).
   */
  settleDelayMs?: number
  /** Milliseconds to wait before verifying. */
  verifyDelayMs?: number
  /**
   * Verifies to fail with a 500 whose text quotes what the payer put in its authorization's
   * `from` and the payload (as a facilitator that crashed on a payment it could not parse),
   * counted down by each one.
   */
  verifyFailures?: number
  /**
   * Settles to fail with a 500 after the request arrived and before anything was broadcast (a
   * facilitator that crashed on it), counted down by each one: the "outcome unknown" case whose
   * payment never moved.
   */
  settleFailures?: number
  /**
   * Settles whose answer is lost, counted down by each one: the facilitator settles for real (the
   * payment lands on chain, whichever rail), then destroys the connection without a byte of its
   * answer, so its client sees a reset socket. The "outcome unknown" case whose payment moved.
   * Served by {@link startFacilitatorServer}; under `app.request()` (no socket) the answer is an
   * empty 502 instead.
   */
  loseNextSettleAnswers?: number
  /**
   * Settles answered with a 500 after settling for real, counted down by each one (a facilitator
   * that crashed after broadcasting): the payment moved, the client hears a failure.
   */
  failNextSettleAnswers?: number
  /**
   * Run once, and awaited, when the next settle arrives, before it settles (then cleared): a test
   * changes the chain between verify and settle, e.g. empties the payer's wallet so that the
   * settlement fails.
   */
  beforeNextSettle?: () => Promise<void>
}

/** One verify or settle a facilitator answered: what tests may check it received. */
export interface FacilitatorReceived {
  op: 'verify' | 'settle'
  /** The status computed (200 for a settle whose answer was then lost or failed by a fault). */
  status: number
  network: string
  /**
   * What became of the answer when a fault changed it after the request ran: `lost` (the socket
   * was destroyed, {@link FacilitatorFaults.loseNextSettleAnswers}) or `failed` (a 500 was sent,
   * {@link FacilitatorFaults.failNextSettleAnswers}); absent when the answer was sent as computed.
   */
  answer?: 'lost' | 'failed'
  /**
   * SHA-256 (hex) of the signed `payload`'s canonical JSON: tells whether two requests carried the
   * same signed payment without recording it.
   */
  payloadSha256: string
  /**
   * The PaymentPayload without its signed `payload`: `resource`, `accepted` and `extensions`
   * (the echoed bazaar info a facilitator catalogues, the payment-identifier).
   */
  payment: Omit<PaymentPayload, 'payload'>
  /** The PaymentRequirements sent with it. */
  requirements: PaymentRequirements
}

/**
 * Requests a facilitator server received, by endpoint (malformed ones included). Tests read it
 * to prove that a refused call never reached /verify or /settle.
 */
export interface FacilitatorRequestCounts {
  supported: number
  verify: number
  settle: number
}

interface FacilitatorRequest {
  paymentPayload: PaymentPayload
  paymentRequirements: PaymentRequirements
}

/**
 * The x402 v2 facilitator HTTP API (x402 specification v2 §7) over an SDK `x402Facilitator`,
 * whatever schemes and networks are registered on it:
 *
 * - `GET /supported` → 200 `SupportedResponse` (`{ kinds, extensions, signers }`)
 * - `POST /verify` with `{ x402Version, paymentPayload, paymentRequirements }` → 200 `VerifyResponse`
 * - `POST /settle` with the same body → 200 `SettleResponse`
 *
 * A rejected payment is still a 200 (`isValid: false` / `success: false`), exactly as
 * `HTTPFacilitatorClient` from `@x402/core` expects. A body that is not JSON or not a PaymentPayload
 * plus PaymentRequirements (checked with the SDK's own schemas) gets 400 `{ error }`; an exception
 * thrown by the facilitator (e.g. no scheme registered for the network) gets 500 `{ error }`.
 * With `auth`, a request without a valid API-key JWT gets 401
 * `{ errorType: "unauthorized", errorMessage }`, as CDP answers.
 *
 * Logs method, path, status, scheme, network and duration only, never payloads, payers or JWTs.
 */
export function createFacilitatorApp(
  facilitator: x402Facilitator,
  options: FacilitatorAppOptions = {},
): Hono {
  const { counts, auth, faults, received } = options
  const app = options.basePath ? new Hono().basePath(options.basePath) : new Hono()
  if (counts) {
    app.use(async (c, next) => {
      const endpoint = c.req.path.split('/').pop()
      if (endpoint === 'supported' || endpoint === 'verify' || endpoint === 'settle') {
        counts[endpoint]++
      }
      await next()
    })
  }
  if (auth) {
    app.use(async (c, next) => {
      const why = await refusal(auth, {
        method: c.req.method,
        host: c.req.header('host') ?? '',
        path: c.req.path,
        authorization: c.req.header('authorization'),
      })
      if (why === undefined) return next()
      logger.info({ path: c.req.path, status: 401, auth: auth.mode }, 'facilitator refused auth')
      return c.json({ errorType: 'unauthorized', errorMessage: `Unauthorized: ${why}` }, 401)
    })
  }
  const delay = (ms: number | undefined) =>
    ms ? new Promise((resolve) => setTimeout(resolve, ms)) : undefined

  app.get('/supported', (c) => c.json(facilitator.getSupported()))

  app.post('/verify', async (c) => {
    await delay(faults?.verifyDelayMs)
    if (faults?.verifyFailures) {
      faults.verifyFailures--
      const text = (await c.req.text()).slice(0, 400)
      logger.info({ op: 'verify', status: 500 }, 'facilitator failed on purpose (fault)')
      return c.json({ error: `fault injected: cannot handle ${text}` }, 500)
    }
    return handle(c, 'verify', received, (req) =>
      facilitator.verify(req.paymentPayload, req.paymentRequirements),
    )
  })
  app.post('/settle', async (c) => {
    await delay(faults?.settleDelayMs)
    const before = faults?.beforeNextSettle
    if (faults && before) {
      faults.beforeNextSettle = undefined
      await before()
    }
    if (faults?.settleFailures) {
      faults.settleFailures--
      logger.info({ op: 'settle', status: 500 }, 'facilitator failed on purpose (fault)')
      return c.json({ error: 'fault injected: settle failed before broadcast' }, 500)
    }
    return handle(
      c,
      'settle',
      received,
      (req) => facilitator.settle(req.paymentPayload, req.paymentRequirements),
      faults,
    )
  })

  return app
}

/**
 * Serves {@link createFacilitatorApp} on a Node HTTP server.
 *
 * @example
 * const server = await startFacilitatorServer(facilitator)
 * const client = new HTTPFacilitatorClient({ url: server.url })
 * // …
 * await server.stop()
 *
 * @throws the listen error (e.g. EADDRINUSE) if the port cannot be bound
 */
export async function startFacilitatorServer(
  facilitator: x402Facilitator,
  options: FacilitatorServerOptions = {},
): Promise<FacilitatorServer> {
  const host = options.host ?? '127.0.0.1'
  const server = createServer(getRequestListener(createFacilitatorApp(facilitator, options).fetch))
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject)
      resolve()
    })
  })
  const { port } = server.address() as AddressInfo
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}${options.basePath ?? ''}`
  logger.debug({ port }, 'facilitator listening')

  let stopping: Promise<void> | undefined
  const stop = (): Promise<void> => {
    stopping ??= new Promise<void>((resolve) => {
      server.close(() => resolve())
      // close() only stops accepting; drop keep-alive and in-flight sockets so a "facilitator
      // down" test sees refused or reset connections at once.
      server.closeAllConnections()
    })
    return stopping
  }
  return { url, stop }
}

async function handle(
  c: Context,
  op: 'verify' | 'settle',
  received: FacilitatorReceived[] | undefined,
  run: (req: FacilitatorRequest) => Promise<object>,
  faults?: FacilitatorFaults,
): Promise<Response> {
  const started = performance.now()
  const req = parseRequest(await c.req.json().catch(() => undefined))
  if (typeof req === 'string') {
    logger.info({ op, status: 400 }, 'facilitator rejected request')
    return c.json({ error: req }, 400)
  }
  const { scheme, network } = req.paymentRequirements
  let status: 200 | 500
  let body: object
  try {
    body = await run(req)
    status = 200
    const ms = Math.round(performance.now() - started)
    logger.info({ op, status, scheme, network, ms }, 'facilitator answered')
  } catch (err) {
    const name = err instanceof Error ? err.name : typeof err
    status = 500
    body = { error: err instanceof Error ? err.message : String(err) }
    logger.warn({ op, status, scheme, network, err: name }, 'facilitator threw')
  }
  // The request ran (the payment may have landed); a fault may now change the answer.
  const answer = afterRun(faults)
  received?.push({ op, status, network, ...(answer ? { answer } : {}), ...recorded(req) })
  if (answer === 'lost') {
    logger.info({ op, network }, 'facilitator dropped its answer on purpose (fault)')
    const socket = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket
    if (!socket) return c.body(null, 502)
    socket.destroy()
    // Never written: the socket is gone.
    return c.body(null, 502)
  }
  if (answer === 'failed') {
    logger.info({ op, network, status: 500 }, 'facilitator failed after settling (fault)')
    return c.json({ error: 'fault injected: settle failed after broadcast' }, 500)
  }
  return c.json(body, status)
}

/** Takes one of the faults that change a settle's answer after it ran, if any is set. */
function afterRun(faults: FacilitatorFaults | undefined): FacilitatorReceived['answer'] {
  if (faults?.loseNextSettleAnswers) {
    faults.loseNextSettleAnswers--
    return 'lost'
  }
  if (faults?.failNextSettleAnswers) {
    faults.failNextSettleAnswers--
    return 'failed'
  }
  return undefined
}

/**
 * What a test may see of a request: everything but the signed payload, which is only known by
 * its digest.
 */
function recorded(
  req: FacilitatorRequest,
): Pick<FacilitatorReceived, 'payment' | 'requirements' | 'payloadSha256'> {
  const { payload: signed, ...payment } = req.paymentPayload
  const payloadSha256 = createHash('sha256')
    .update(canonicalize(signed) ?? '')
    .digest('hex')
  return { payment, requirements: req.paymentRequirements, payloadSha256 }
}

/**
 * Requirements with `maxTimeoutSeconds` 0 read as 1 for the guards when they are the
 * `batch-settlement` channel manager's own operations (claim, settle, refund): @x402/evm's
 * `BatchSettlementChannelManager` sends them with `maxTimeoutSeconds: 0`, which @x402/core's
 * guards refuse, though its facilitator scheme settles them.
 */
function managerOperation(requirements: unknown): unknown {
  if (typeof requirements !== 'object' || requirements === null) return requirements
  const req = requirements as Record<string, unknown>
  return req.scheme === 'batch-settlement' && req.maxTimeoutSeconds === 0
    ? { ...req, maxTimeoutSeconds: 1 }
    : req
}

/** The request body per spec §7.1, or a reason it is malformed. */
function parseRequest(body: unknown): FacilitatorRequest | string {
  if (typeof body !== 'object' || body === null) return 'body must be a JSON object'
  const { x402Version, paymentPayload, paymentRequirements } = body as Record<string, unknown>
  const guarded =
    typeof paymentPayload === 'object' && paymentPayload !== null
      ? {
          ...paymentPayload,
          accepted: managerOperation((paymentPayload as { accepted?: unknown }).accepted),
        }
      : paymentPayload
  if (!isPaymentPayload(guarded)) return 'paymentPayload is not a valid PaymentPayload'
  if (!isPaymentRequirements(managerOperation(paymentRequirements))) {
    return 'paymentRequirements is not a valid PaymentRequirements'
  }
  if (x402Version !== guarded.x402Version) {
    return 'x402Version must equal paymentPayload.x402Version'
  }
  // The SDK guards validate V1 and V2 shapes without stripping fields; x402Facilitator routes on
  // x402Version itself, and its signature takes the v2 types for both.
  return {
    paymentPayload: paymentPayload as PaymentPayload,
    paymentRequirements: paymentRequirements as PaymentRequirements,
  }
}
