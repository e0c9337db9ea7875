import { z } from 'zod'
import type { InputIssue } from '../tools/input-issues.js'
import type { ToolDefinition } from '../tools/types.js'
import {
  type DeliveryClaims,
  MAX_RECEIPT_CHARS,
  type ReceiptVerdict,
  type SignatureFailure,
} from './delivery.js'

/** Path of the free receipt verification. */
export const RECEIPTS_VERIFY_PATH = '/receipts/verify'

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

/**
 * The given input as the paid call checked it: the SHA-256 of its RFC 8785 form with the tool's
 * defaults applied and a re-run of the tool on it (both done by the caller, off this module), or
 * why the tool's schema refuses it.
 */
export type CheckedGivenInput =
  | { status: 'ok'; digest: string; rerun(iat: number): Promise<string> }
  | { status: 'invalid'; issues: InputIssue[] }

/** One verification: a receipt, and optionally what the client says it sent and received. */
export interface VerificationRequest {
  receipt: string
  /** Checks the given input for the receipt's tool; absent when no input was given. */
  input?: (tool: ToolDefinition) => Promise<CheckedGivenInput>
  /** Lower-case hex SHA-256 of the RFC 8785 form of the given result; absent when none was given. */
  resultDigest?: string
}

/** What a verification is built from. */
export interface VerificationOptions {
  /** The signature check of `Receipts.verify`. */
  receipts: { verify(receipt: string): Promise<ReceiptVerdict> }
  /** The catalogue: the tool a receipt names is checked and re-run. */
  tools: readonly ToolDefinition[]
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
 * Creates the verification of `POST /receipts/verify`: the signature first (a published key, then
 * the claims); then the digest of the result given; then the input given, and only when the
 * signature is ours and the input's digest matches (else anyone could run a tool for free), the
 * tool again at the receipt's `iat`. Every check that could run is reported, the first failure
 * is the `reason`.
 *
 * @example
 * const verify = createVerification({ receipts, tools: catalog })
 * (await verify({ receipt })).checks // { input: 'not_given', result: 'not_given', recomputed: 'not_run' }
 * @throws what `input` or its `rerun` throws (the caller's overload refusal)
 */
export function createVerification(
  options: VerificationOptions,
): (request: VerificationRequest) => Promise<VerifyAnswer> {
  const tools = new Map(options.tools.map((tool) => [tool.id, tool]))

  return async function verifyDelivery(request) {
    const hasResult = request.resultDigest !== undefined
    const verdict = await options.receipts.verify(request.receipt)
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
        input: request.input ? 'not_checked' : 'not_given',
        result: hasResult ? 'not_checked' : 'not_given',
        recomputed: 'not_run',
      },
    }
    const failures: DigestFailure[] = []
    if (hasResult) {
      const matches = request.resultDigest === claims.result_sha256
      answer.checks.result = matches ? 'match' : 'mismatch'
      if (!matches) failures.push('result_mismatch')
    }
    const tool = tools.get(claims.tool)
    if (request.input && tool) {
      const checked = await request.input(tool)
      if (checked.status !== 'ok') {
        answer.checks.input = 'invalid'
        answer.input_errors = checked.issues
        failures.push('input_invalid')
      } else if (checked.digest !== claims.input_sha256) {
        answer.checks.input = 'mismatch'
        failures.push('input_mismatch')
      } else {
        answer.checks.input = 'match'
        const recomputed = await checked.rerun(claims.iat)
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
}
