import { decodeJwt, decodeProtectedHeader } from 'jose'
import { z } from 'zod'
import { assertFiniteNumbers } from './json-value.js'
import { KiB } from './limits.js'
import { type ToolDefinition, type ToolEnv, ToolError } from './types.js'
import { wellFormedFields } from './unicode.js'

/** Longest accepted token: 16 KiB (after an optional "Bearer " prefix). */
export const MAX_JWT_LENGTH = 16 * KiB

/** Request body of POST /jwt-inspect (SPEC 2.2). */
export const jwtInspectInput = z
  .object({
    token: z
      .string()
      .min(1)
      .max(MAX_JWT_LENGTH + 64)
      .describe(
        'JWT in compact serialization (RFC 7519), optionally prefixed with "Bearer ". Decoded, never verified.',
      ),
  })
  .strict()

/** Parsed jwt-inspect request. */
export type JwtInspectInput = z.output<typeof jwtInspectInput>

const timestamp = z.object({
  value: z.number().describe('NumericDate: seconds since 1970-01-01T00:00:00Z.'),
  iso: z.string().describe('The same instant in ISO 8601 (UTC).'),
})

/** `result` of a jwt-inspect call. */
export const jwtInspectOutput = z.object({
  type: z.enum(['JWS', 'JWE']).describe('JWS (3 segments) or JWE (5 segments).'),
  header: z.record(z.string(), z.unknown()).describe('Decoded JOSE protected header.'),
  claims: z
    .record(z.string(), z.unknown())
    .nullable()
    .describe('Decoded claims set; null for a JWE (its payload is encrypted).'),
  signature: z.object({
    present: z.boolean().describe('Whether the signature segment is non-empty (JWS only).'),
    bytes: z.number().int().min(0).describe('Length of the decoded signature in bytes.'),
  }),
  unsecured: z.boolean().describe('Whether the header says alg "none" (RFC 7519 section 6).'),
  timestamps: z
    .object({ iat: timestamp.optional(), nbf: timestamp.optional(), exp: timestamp.optional() })
    .describe('Numeric iat, nbf and exp claims; non-numeric ones are left out with a warning.'),
  validity: z.object({
    now: z.number().int().describe('Current time used, in Unix seconds.'),
    status: z
      .enum(['valid', 'expired', 'not_yet_valid', 'no_exp'])
      .describe('Time validity only; the signature is never checked.'),
    expires_in_seconds: z
      .number()
      .nullable()
      .describe('exp - now (negative once expired), or null without a numeric exp.'),
  }),
  warnings: z.array(z.string()).describe('Things worth a second look.'),
  signature_verified: z.literal(false).describe('Always false: no key, no verification.'),
})

/** Result of {@link jwtInspect}. */
export type JwtInspectResult = z.output<typeof jwtInspectOutput>

type Timestamps = JwtInspectResult['timestamps']

const SEGMENT = /^[A-Za-z0-9_-]*$/
const DATE_CLAIMS = ['iat', 'nbf', 'exp'] as const
// Date can represent +/-8.64e15 ms; NumericDates beyond that have no ISO form.
const MAX_DATE_SECONDS = 8.64e12

function invalid(message: string, details?: Record<string, unknown>): never {
  throw new ToolError('invalid_jwt', message, details)
}

/**
 * Strips "Bearer " (RFC 6750; the scheme is case-insensitive) and checks the compact form before
 * jose sees it: jose's own split accepts padding and other noise we want to report precisely.
 */
function splitCompact(token: string): string[] {
  const compact = token.trim().replace(/^bearer\s+/i, '')
  if (compact.length > MAX_JWT_LENGTH) {
    invalid(`token is ${compact.length} characters; the limit is ${MAX_JWT_LENGTH}`)
  }
  const segments = compact.split('.')
  if (segments.length !== 3 && segments.length !== 5) {
    invalid(
      `a compact JWT has 3 (JWS) or 5 (JWE) dot-separated segments; this token has ${segments.length}`,
      { segments: segments.length },
    )
  }
  segments.forEach((segment, index) => {
    const bad = segment.search(/[^A-Za-z0-9_-]/)
    if (!SEGMENT.test(segment)) {
      invalid(
        `segment ${index + 1} is not base64url (RFC 7515 section 2): unexpected character at offset ${bad}`,
        { segment: index + 1, offset: bad },
      )
    }
    if (segment.length % 4 === 1) {
      invalid(`segment ${index + 1} has an impossible base64url length (${segment.length})`, {
        segment: index + 1,
      })
    }
  })
  if (segments[0] === '') invalid('the protected header segment is empty', { segment: 1 })
  if (segments.length === 3 && segments[1] === '') {
    invalid('the payload segment is empty (detached payloads cannot be inspected)', { segment: 2 })
  }
  return segments
}

function readTimestamps(claims: Record<string, unknown>, warnings: string[]): Timestamps {
  const timestamps: Timestamps = {}
  for (const claim of DATE_CLAIMS) {
    if (!Object.hasOwn(claims, claim)) continue
    const value = claims[claim]
    if (typeof value !== 'number' || !Number.isFinite(value)) {
      warnings.push(`"${claim}" is not a NumericDate (a number of seconds) and was ignored`)
      continue
    }
    if (Math.abs(value) > MAX_DATE_SECONDS) {
      warnings.push(`"${claim}" is outside the representable date range and was ignored`)
      continue
    }
    timestamps[claim] = { value, iso: new Date(value * 1000).toISOString() }
  }
  return timestamps
}

/**
 * Same inequalities as jose's `jwtVerify` with no clock tolerance, checked in the same order:
 * not yet valid when `nbf > now`, expired when `exp <= now`.
 */
function validityOf(timestamps: Timestamps, now: number): JwtInspectResult['validity'] {
  const exp = timestamps.exp?.value
  const nbf = timestamps.nbf?.value
  const expiresIn = exp === undefined ? null : exp - now
  if (nbf !== undefined && nbf > now) {
    return { now, status: 'not_yet_valid', expires_in_seconds: expiresIn }
  }
  if (exp === undefined) return { now, status: 'no_exp', expires_in_seconds: null }
  return { now, status: exp <= now ? 'expired' : 'valid', expires_in_seconds: expiresIn }
}

/** The shape check of jwtInspect (see `ToolDefinition.check`): well-formed Unicode in token. */
export const checkJwtInspect = wellFormedFields<JwtInspectInput>('token')

/**
 * Decodes a compact JWT (RFC 7519) without verifying it: header, claims, signature size, date
 * claims and time validity against `env.nowSeconds()`. A JWE (5 segments) yields its protected
 * header only.
 *
 * @example jwtInspect({ token: 'eyJhbGciOiJub25lIn0.eyJleHAiOjF9.' }, { nowSeconds: () => 2 })
 * // { type: 'JWS', unsecured: true, validity: { now: 2, status: 'expired', expires_in_seconds: -1 }, ... }
 * @throws {ToolError} `invalid_unicode`; `invalid_jwt` for anything that is not a compact JWS/JWE
 *   with a JSON object header and claims set; `number_out_of_range` for a header or claim number
 *   such as 1e400, which would show as null
 */
export function jwtInspect(input: JwtInspectInput, env: ToolEnv): JwtInspectResult {
  checkJwtInspect(input)
  const segments = splitCompact(input.token)
  const compact = segments.join('.')
  const warnings: string[] = []
  let header: Record<string, unknown>
  try {
    header = decodeProtectedHeader(compact) as Record<string, unknown>
  } catch (error) {
    invalid(`the protected header is not a base64url JSON object: ${(error as Error).message}`, {
      segment: 1,
    })
  }
  assertFiniteNumbers(header, '/header')
  const now = env.nowSeconds()
  const alg = header.alg
  const unsecured = typeof alg === 'string' && alg.toLowerCase() === 'none'
  if (unsecured) {
    warnings.push(
      `alg is ${JSON.stringify(alg)}: the token is unsecured (RFC 7519 section 6) and anyone can forge it`,
    )
  }
  if (alg === undefined) warnings.push('the header has no "alg" parameter')

  if (segments.length === 5) {
    warnings.push('JWE: the claims are encrypted, so only the protected header is shown')
    return {
      type: 'JWE',
      header,
      claims: null,
      signature: { present: false, bytes: 0 },
      unsecured,
      timestamps: {},
      validity: { now, status: 'no_exp', expires_in_seconds: null },
      warnings,
      signature_verified: false,
    }
  }

  let claims: Record<string, unknown>
  try {
    claims = decodeJwt(compact) as Record<string, unknown>
  } catch (error) {
    invalid(`the payload is not a base64url JSON object: ${(error as Error).message}`, {
      segment: 2,
    })
  }
  assertFiniteNumbers(claims, '/claims')
  const signatureBytes = Buffer.from(segments[2] as string, 'base64url').length
  if (unsecured && signatureBytes > 0) {
    warnings.push(
      'alg is "none" but a signature segment is present (RFC 7519 section 6.1 wants it empty)',
    )
  }
  const timestamps = readTimestamps(claims, warnings)
  return {
    type: 'JWS',
    header,
    claims,
    signature: { present: signatureBytes > 0, bytes: signatureBytes },
    unsecured,
    timestamps,
    validity: validityOf(timestamps, now),
    warnings,
    signature_verified: false,
  }
}

/** Catalogue entry (SPEC 4.1: POST /jwt-inspect, payload_jwt_inspect, 0.001 USDC). */
export const jwtInspectTool: ToolDefinition<JwtInspectInput, JwtInspectResult> = {
  id: 'jwt-inspect',
  path: '/jwt-inspect',
  mcpName: 'payload_jwt_inspect',
  operationId: 'jwt_inspect',
  price: '1000',
  title: 'JWT inspect',
  description:
    'Decode a JWT without verifying it: header, claims, signature size, iat/nbf/exp as ISO dates, and whether it is valid, expired or not yet valid now.',
  input: jwtInspectInput,
  output: jwtInspectOutput,
  examples: [
    {
      token:
        'eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c',
    },
    {
      token:
        'Bearer eyJhbGciOiJub25lIn0.eyJpc3MiOiJqb2UiLA0KICJleHAiOjEzMDA4MTkzODAsDQogImh0dHA6Ly9leGFtcGxlLmNvbS9pc19yb290Ijp0cnVlfQ.',
    },
  ],
  limits: [
    `token: at most ${MAX_JWT_LENGTH / KiB} KiB after an optional "Bearer " prefix`,
    'token: 3 (JWS) or 5 (JWE) base64url segments without padding',
  ],
  check: checkJwtInspect,
  run: (input, env) => jwtInspect(input, env),
}
