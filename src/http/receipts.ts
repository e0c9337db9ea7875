import type { Context, Hono } from 'hono'
import { z } from 'zod'
import { InvalidJsonError } from '../descriptions/errors.js'
import { type InputIssue, InvalidInputError } from '../payment/errors.js'
import {
  type DeliveryClaims,
  JWKS_PATH,
  MAX_RECEIPT_CHARS,
  type Receipts,
  type SignatureFailure,
} from '../receipts/index.js'
import type { CheckedInput } from '../runner/check.js'
import { OverloadedError } from '../runner/errors.js'
import type { ToolRunner } from '../runner/runner.js'
import type { CheckOutcome, FieldRead, FieldsOutcome } from '../runner/task.js'
import type { ToolDefinition } from '../tools/types.js'

/** Path of the free receipt verification. */
export const RECEIPTS_VERIFY_PATH = '/receipts/verify'

/**
 * Recomputations (a tool run on a worker, for a verification) in flight at once per instance:
 * verification is free, so it may take one worker at most and never crowd out paid calls. Beyond
 * it: 503 `overloaded` with `Retry-After: 1`.
 */
export const MAX_RECOMPUTES_IN_FLIGHT = 1

/** The JWKS and DID document may be cached this long, in seconds (a rotation shows within it). */
const KEYS_MAX_AGE = 300

/** Body of `POST /receipts/verify`. */
export const verifyRequestSchema = z
  .object({
    receipt: z
      .string()
      .max(MAX_RECEIPT_CHARS)
      .describe(
        'The delivery receipt: the compact JWS of extensions["delivery-receipt"].info.receipt.',
      ),
    input: z
      .unknown()
      .optional()
      .describe(
        'The input sent (the request body or MCP arguments): checked against the tool schema, its defaults applied, then its digest compared with input_sha256; when it matches, the tool is run again to compare results.',
      ),
    result: z
      .unknown()
      .optional()
      .describe(
        'The result received (the envelope\'s "result"): its digest is compared with result_sha256.',
      ),
  })
  .strict()
  .describe('A delivery receipt, and optionally the input and result it should bind.')

/** Why a verification fails: the receipt's own reasons, then the digests'. */
export type VerifyFailure =
  | SignatureFailure
  | 'input_invalid'
  | 'input_mismatch'
  | 'result_mismatch'
  | 'recomputed_mismatch'

/** Body of the answer of `POST /receipts/verify` (always 200 once the request could be read). */
export interface VerifyAnswer {
  /** The signature is ours and every check that could run passed. */
  valid: boolean
  /** The first failure, when not valid. */
  reason?: VerifyFailure
  /** One sentence: what was checked and what failed. */
  message: string
  signature: { valid: boolean; kid?: string; key?: 'current' | 'retired' }
  /** The verified claims (absent when the signature is not ours). */
  claims?: DeliveryClaims
  checks: {
    input: 'match' | 'mismatch' | 'invalid' | 'not_given' | 'not_checked'
    result: 'match' | 'mismatch' | 'not_given' | 'not_checked'
    /** Whether running the tool again on the input gives the receipt's result. */
    recomputed: 'match' | 'mismatch' | 'not_run'
  }
  /** Why the input does not pass the tool's schema (JSON Pointers), when `checks.input` is `invalid`. */
  input_errors?: InputIssue[]
}

/** JSON Schema of {@link VerifyAnswer}, for OpenAPI. */
export const verifyAnswerJsonSchema = {
  type: 'object',
  required: ['valid', 'message', 'signature', 'checks'],
  properties: {
    valid: {
      type: 'boolean',
      description: 'The signature is ours and every check that could run passed.',
    },
    reason: {
      type: 'string',
      enum: [
        'malformed',
        'unknown_key',
        'bad_signature',
        'invalid_claims',
        'input_invalid',
        'input_mismatch',
        'result_mismatch',
        'recomputed_mismatch',
      ],
      description: 'The first failure, when not valid.',
    },
    message: { type: 'string' },
    signature: {
      type: 'object',
      required: ['valid'],
      properties: {
        valid: { type: 'boolean' },
        kid: { type: 'string', description: 'The key named in the receipt header.' },
        key: { type: 'string', enum: ['current', 'retired'] },
      },
    },
    claims: { type: 'object', description: 'The verified claims (see docs/receipts.md).' },
    checks: {
      type: 'object',
      required: ['input', 'result', 'recomputed'],
      properties: {
        input: {
          type: 'string',
          enum: ['match', 'mismatch', 'invalid', 'not_given', 'not_checked'],
        },
        result: { type: 'string', enum: ['match', 'mismatch', 'not_given', 'not_checked'] },
        recomputed: { type: 'string', enum: ['match', 'mismatch', 'not_run'] },
      },
    },
    input_errors: {
      type: 'array',
      items: {
        type: 'object',
        required: ['path', 'message'],
        properties: { path: { type: 'string' }, message: { type: 'string' } },
      },
    },
  },
} as const

/** What the receipt endpoints are built from. */
export interface ReceiptRoutesOptions {
  receipts: Receipts
  tools: readonly ToolDefinition[]
  /** Runs the recomputation on a worker, under the tools' time budget. */
  runner: ToolRunner
}

/** What a signature that is ours can still fail on. */
type DigestFailure = Exclude<VerifyFailure, SignatureFailure>

const SENTENCES: Record<DigestFailure, string> = {
  input_invalid:
    "The input does not pass the tool's schema, so it is not the input this receipt was paid for",
  input_mismatch:
    "The input's digest is not the receipt's input_sha256: this receipt is for another input",
  result_mismatch:
    "The result's digest is not the receipt's result_sha256: this is not the result delivered",
  recomputed_mismatch:
    "Running the tool again on the input does not give the receipt's result_sha256",
}

/**
 * Registers the receipt endpoints, all free (the app's rate limit counts them like every request
 * without a payment):
 * - `GET /.well-known/jwks.json`: the receipt keys (RFC 7517), current and retired;
 * - `GET <did document path>`: the did:web DID document the `offer-receipt` kids resolve through;
 * - `POST /receipts/verify`: `{receipt, input?, result?}` -> {@link VerifyAnswer}. The signature
 *   first (a key of the JWKS, then the claims); then the digests of what was given; and, only
 *   when the signature is ours and the input's digest matches (else the endpoint would run any
 *   tool for free), the tool again on a worker, under its time budget, at the receipt's `iat`
 *   (the clock the call used), at most {@link MAX_RECOMPUTES_IN_FLIGHT} at a time.
 *
 * @example
 * registerReceipts(app, { receipts, tools: catalog, runner: gate.runner })
 */
export function registerReceipts(app: Hono, options: ReceiptRoutesOptions): void {
  const { receipts, runner } = options
  const tools = new Map(options.tools.map((tool) => [tool.id, tool]))
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

  async function verify(body: Uint8Array, request: VerifyRequest): Promise<VerifyAnswer> {
    const hasInput = request.input !== undefined
    const hasResult = request.result !== undefined
    const verdict = await receipts.verify(request.receipt)
    if (!verdict.valid) {
      return {
        valid: false,
        reason: verdict.reason,
        message: verdict.message,
        signature: { valid: false, ...(verdict.kid ? { kid: verdict.kid } : {}) },
        checks: { input: 'not_checked', result: 'not_checked', recomputed: 'not_run' },
      }
    }
    const { claims } = verdict
    const answer: VerifyAnswer = {
      valid: true,
      message: '',
      signature: { valid: true, kid: verdict.kid, key: verdict.key },
      claims,
      checks: {
        input: hasInput ? 'not_checked' : 'not_given',
        result: hasResult ? 'not_checked' : 'not_given',
        recomputed: 'not_run',
      },
    }
    const failures: DigestFailure[] = []
    if (request.result) {
      const matches = request.result.digest === claims.result_sha256
      answer.checks.result = matches ? 'match' : 'mismatch'
      if (!matches) failures.push('result_mismatch')
    }
    const tool = tools.get(claims.tool)
    if (hasInput && tool) {
      // The input as the gate checked it, on a checker thread: the tool's schema with its
      // defaults, its shape check, the RFC 8785 form and its SHA-256.
      const checked = await runner.check(tool, { body, field: 'input' })
      if (checked.status !== 'ok') {
        answer.checks.input = 'invalid'
        answer.input_errors = inputErrors(checked)
        failures.push('input_invalid')
      } else if (checked.digest !== claims.input_sha256) {
        answer.checks.input = 'mismatch'
        failures.push('input_mismatch')
      } else {
        answer.checks.input = 'match'
        const recomputed = await recompute(tool, checked, claims.iat)
        answer.checks.recomputed = recomputed === claims.result_sha256 ? 'match' : 'mismatch'
        if (answer.checks.recomputed === 'mismatch') failures.push('recomputed_mismatch')
      }
    }
    const [first] = failures
    const key = `key ${verdict.kid} (${verdict.key})`
    if (first) {
      answer.valid = false
      answer.reason = first
      answer.message = `The receipt is signed by this service (${key}), but: ${failures.map((f) => SENTENCES[f]).join('; ')}.`
    } else {
      const passed = [
        answer.checks.input === 'match' ? 'the input matches input_sha256' : undefined,
        answer.checks.result === 'match' ? 'the result matches result_sha256' : undefined,
        answer.checks.recomputed === 'match'
          ? `running ${claims.tool} again gives the same result`
          : undefined,
      ].filter(Boolean)
      answer.message = `The receipt is signed by this service (${key})${passed.length ? `; ${passed.join(', ')}` : '; give input and result to check them too'}.`
    }
    return answer
  }

  app.post(RECEIPTS_VERIFY_PATH, async (c: Context) => {
    // Read as bytes and parsed on a checker thread: a body of up to 1 MiB never holds the thread
    // that serves requests (the input is checked there too, from a copy of the same bytes).
    const body = new Uint8Array(await c.req.arrayBuffer())
    const request = readRequest(await runner.fields(body.slice(), ['receipt', 'input', 'result']))
    const answer = await verify(body, request)
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
 * The request's fields, checked as {@link verifyRequestSchema} states (an object with a
 * `receipt` string of at most {@link MAX_RECEIPT_CHARS} characters, and only `input` and `result`
 * besides).
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
