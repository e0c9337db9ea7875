import type { Context, Hono } from 'hono'
import { type InputIssue, InvalidInputError, InvalidJsonError } from '../payment/errors.js'
import { type ClientQuota, requestPoints } from '../payment/quota.js'
import {
  type CheckedGivenInput,
  createVerification,
  JWKS_PATH,
  MAX_RECEIPT_CHARS,
  RECEIPTS_VERIFY_PATH,
  type Receipts,
} from '../receipts/index.js'
import type { CheckedInput } from '../runner/check.js'
import { OverloadedError } from '../runner/errors.js'
import type { ToolRunner } from '../runner/runner.js'
import type { CheckOutcome, FieldRead, FieldsOutcome } from '../runner/task.js'
import type { ToolDefinition } from '../tools/types.js'

/**
 * Recomputations (a tool run on a worker, for a verification) in flight at once per instance:
 * verification is free, so it may take one worker at most and never crowd out paid calls. Beyond
 * it: 503 `overloaded` with `Retry-After: 1`.
 */
export const MAX_RECOMPUTES_IN_FLIGHT = 1

/** The JWKS and DID document may be cached this long, in seconds (a rotation shows within it). */
const KEYS_MAX_AGE = 300

/** What the receipt endpoints are built from. */
export interface ReceiptRoutesOptions {
  receipts: Receipts
  tools: readonly ToolDefinition[]
  /** Runs the recomputation on a worker, under the tools' time budget. */
  runner: ToolRunner
  /**
   * The rate-limit account of a request's client (`RateLimit.quotaOf`): a verification body pays
   * the points of its size before it is parsed. Absent: no limit.
   */
  quotaOf?: ((c: Context) => ClientQuota) | undefined
}

/**
 * Registers the receipt endpoints, all free (the app's rate limit counts them like every request
 * without a payment): `GET /.well-known/jwks.json` (RFC 7517), the did:web DID document, and
 * `POST /receipts/verify` -> `VerifyAnswer` (src/receipts/verification.ts). A verification body
 * costs a point per started 64 KiB (`requestPoints`: the first taken where it arrived, the rest
 * before it is parsed; over the limit, 429 and nothing parsed). The body is read and the input
 * checked on checker threads, the tool re-run on a worker under its time budget, at most
 * {@link MAX_RECOMPUTES_IN_FLIGHT} at a time.
 *
 * @example
 * registerReceipts(app, { receipts, tools: catalog, runner: gate.runner })
 */
export function registerReceipts(app: Hono, options: ReceiptRoutesOptions): void {
  const { receipts, runner } = options
  const verify = createVerification({ receipts, tools: options.tools })
  const jwks = JSON.stringify(receipts.jwks())
  const didDocument = JSON.stringify(receipts.didDocument())
  const keysHeaders = {
    'Content-Type': 'application/json',
    'Cache-Control': `public, max-age=${KEYS_MAX_AGE}`,
  }
  app.get(JWKS_PATH, (c) =>
    c.body(jwks, 200, { ...keysHeaders, 'Content-Type': 'application/jwk-set+json' }),
  )
  app.get(receipts.didDocumentPath, (c) =>
    c.body(didDocument, 200, { ...keysHeaders, 'Content-Type': 'application/did+json' }),
  )

  let recomputing = 0
  async function recompute(tool: ToolDefinition, input: CheckedInput, at: number): Promise<string> {
    if (recomputing >= MAX_RECOMPUTES_IN_FLIGHT) throw new OverloadedError(1)
    recomputing++
    try {
      return (await runner.admit().run(tool, input, at)).digest
    } finally {
      recomputing--
    }
  }

  // The input as the gate checked it, on a checker thread: the tool's schema with its defaults,
  // its shape check, the RFC 8785 form and its SHA-256.
  async function checkInput(tool: ToolDefinition, body: Uint8Array): Promise<CheckedGivenInput> {
    const checked = await runner.check(tool, { body, field: 'input' })
    if (checked.status !== 'ok') return { status: 'invalid', issues: inputErrors(checked) }
    return { status: 'ok', digest: checked.digest, rerun: (iat) => recompute(tool, checked, iat) }
  }

  app.post(RECEIPTS_VERIFY_PATH, async (c: Context) => {
    // Bytes, parsed on a checker thread: a body of up to 1 MiB never holds the serving thread.
    const body = new Uint8Array(await c.req.arrayBuffer())
    // Its first point was taken where it arrived (the app's rate limit); its size pays the rest.
    await options.quotaOf?.(c).charge(requestPoints(body.length) - 1)
    const request = readRequest(await runner.fields(body.slice(), ['receipt', 'input', 'result']))
    const answer = await verify({
      receipt: request.receipt,
      ...(request.input ? { input: (tool: ToolDefinition) => checkInput(tool, body) } : {}),
      ...(request.result ? { resultDigest: request.result.digest } : {}),
    })
    return c.json(answer, 200, { 'Cache-Control': 'no-store' })
  })
}

/** A `POST /receipts/verify` body as a checker thread read it. */
interface VerifyRequest {
  receipt: string
  input?: FieldRead
  result?: FieldRead
}

/**
 * The request's fields, checked as `verifyRequestSchema` states (an object with a `receipt`
 * string of at most {@link MAX_RECEIPT_CHARS} characters, and only `input` and `result` besides).
 *
 * @throws {InvalidJsonError} the body is not JSON
 * @throws {InvalidInputError} its shape is not a verification request
 */
function readRequest(outcome: FieldsOutcome): VerifyRequest {
  if (outcome.status === 'invalid_json') throw new InvalidJsonError(outcome.message)
  if (outcome.status === 'invalid') {
    throw new InvalidInputError([{ path: '', message: outcome.message }])
  }
  const issues: InputIssue[] = []
  const extra = outcome.keys.filter((k) => k !== 'receipt' && k !== 'input' && k !== 'result')
  for (const key of extra) issues.push({ path: '', message: `Unrecognized key: "${key}"` })
  const receipt = outcome.fields.receipt
  if (receipt?.text === undefined || receipt.text.length > MAX_RECEIPT_CHARS) {
    issues.push({
      path: '/receipt',
      message: `Invalid input: expected a string of at most ${MAX_RECEIPT_CHARS} characters`,
    })
  }
  if (issues.length > 0 || receipt?.text === undefined) throw new InvalidInputError(issues)
  return {
    receipt: receipt.text,
    ...(outcome.fields.input ? { input: outcome.fields.input } : {}),
    ...(outcome.fields.result ? { result: outcome.fields.result } : {}),
  }
}

/** Why an input the checker refused is not the input a receipt was paid for. */
function inputErrors(outcome: Exclude<CheckOutcome, { status: 'ok' }>): InputIssue[] {
  switch (outcome.status) {
    case 'invalid':
      return outcome.issues
    case 'refused':
      return [{ path: '', message: outcome.error.message, code: outcome.error.code }]
    case 'invalid_json':
      return [{ path: '', message: outcome.message }]
    default:
      return [{ path: '', message: 'The input could not be checked' }]
  }
}
