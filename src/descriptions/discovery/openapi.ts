import { z } from 'zod'
import {
  DELIVERY_RECEIPT,
  deliveryClaimsSchema,
  didDocumentPath,
  JWKS_PATH,
  OFFER_RECEIPT,
  RECEIPTS_VERIFY_PATH,
  verifyAnswerJsonSchema,
  verifyRequestSchema,
} from '../../receipts/index.js'
import type { JsonSchema, ToolDefinition } from '../../tools/types.js'
import type { ErrorCodeDoc } from '../error-codes.js'
import { toolExample } from '../examples.js'
import { hoistDefs, toolInputSchema, toolResultSchema } from '../json-schema.js'
import { LIMITS_DOC, type LimitDoc, limitLines } from '../limits.js'
import {
  componentStem,
  MCP_PATH,
  type PublishedRail,
  SERVICE,
  serviceSummary,
  toolPrice,
  X402,
} from '../service-info.js'
import { capabilitiesSchema } from './capabilities.js'
import { httpPaymentSteps, mcpPaymentSteps, receiptSteps, shortGuidance } from './guidance.js'
import { healthSchema } from './health-schema.js'
import { statsSchema } from './stats-schema.js'
import { wellKnownSchema } from './well-known.js'

/** The request id of the failure examples (a UUID, as the service makes them). */
const EXAMPLE_REQUEST_ID = '0f8e5c2a-6b1d-4c3e-9a7f-2d4b6e8f1a3c'

export interface OpenApiOptions {
  tools: readonly ToolDefinition[]
  /** Base URL without trailing slash: the only `servers` entry. */
  publicBaseUrl: string
  /** Configured rails: their atomic amounts go into each paid operation's `x-payment-info`. */
  rails: readonly PublishedRail[]
  /** Every failure `code`: the `ErrorCode` enum. */
  errorCodes: readonly ErrorCodeDoc[]
  /** Largest accepted body, in bytes (the 413 description). */
  maxBodyBytes: number
  /** The service-wide limits of this deployment (body, run time, admission). */
  limits: readonly LimitDoc[]
}

/** An OpenAPI 3.1 document, as plain JSON. */
export type OpenApiDocument = Record<string, unknown>

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` })
const json = (schema: unknown, extra: Record<string, unknown> = {}) => ({
  'application/json': { schema, ...extra },
})

/** JSON Schema of a Zod schema, as a component (hoisted `$defs`, no `$schema`). */
function component(
  schemas: Record<string, JsonSchema>,
  name: string,
  schema: z.ZodType | JsonSchema,
  io: 'input' | 'output' = 'output',
): void {
  const generated =
    schema instanceof z.ZodType
      ? (z.toJSONSchema(schema, { target: 'draft-2020-12', io }) as JsonSchema)
      : schema
  const { root, defs } = hoistDefs(generated, name, '#/components/schemas/')
  for (const [key, value] of Object.entries({ [name]: root, ...defs })) {
    if (schemas[key]) throw new Error(`OpenAPI: duplicate component schema ${key}`)
    schemas[key] = value
  }
}

/** The shared schemas, headers and responses of every paid operation. */
function sharedComponents(options: OpenApiOptions, schemas: Record<string, JsonSchema>) {
  const codes = options.errorCodes
  schemas.ErrorCode = {
    type: 'string',
    description:
      'Machine-readable failure code. Service codes come from the HTTP and payment layers; tool ' +
      'codes from a tool that rejected its input (always 400, never charged).',
    enum: codes.map((c) => c.code),
    'x-enumDescriptions': Object.fromEntries(
      codes.map((c) => [c.code, `${c.status} (${c.source}): ${c.meaning}`]),
    ),
  }
  const code = ref('ErrorCode')
  schemas.InputIssue = {
    type: 'object',
    description: 'One problem with the request body.',
    properties: {
      path: { type: 'string', description: 'JSON Pointer (RFC 6901) into the body; "" = root.' },
      message: { type: 'string' },
    },
    required: ['path', 'message'],
  }
  schemas.InputCheck = {
    type: 'object',
    description:
      'The free pre-payment check of an unpaid request that carried a body: pay only when valid.',
    properties: {
      valid: { type: 'boolean' },
      errors: { type: 'array', items: ref('InputIssue') },
    },
    required: ['valid', 'errors'],
  }
  schemas.Failure = {
    type: 'object',
    description: 'The failure envelope (SPEC 2.1, 7).',
    properties: {
      ok: { const: false },
      error: { type: 'string', description: 'Human-readable message.' },
      code,
      issues: {
        type: 'array',
        items: ref('InputIssue'),
        description: 'With `invalid_request`: what is wrong with the body.',
      },
      details: {
        type: 'object',
        description: 'With a tool code: offsets, step index or keyword of the failure.',
      },
      input_check: ref('InputCheck'),
      request_id: {
        type: 'string',
        pattern: '^[A-Za-z0-9_=-]{1,128}$',
        description:
          'The id of the request, also in its `X-Request-Id` response header: the caller’s own ' +
          '`X-Request-Id` when it is 1 to 128 characters of `A-Z a-z 0-9 _ - =`, else a UUID. ' +
          'Quote it when reporting a problem.',
      },
    },
    required: ['ok', 'error', 'code'],
  }
  const failure = (code: string, error: string, extra: Record<string, unknown> = {}) => ({
    ok: false,
    error,
    code,
    ...extra,
    request_id: EXAMPLE_REQUEST_ID,
  })
  const headers = {
    PaymentRequired: {
      description:
        'Base64 of the x402 v2 PaymentRequired JSON: `x402Version`, `resource`, `accepts` (one ' +
        '`exact` entry per rail with `network`, `amount` in atomic units, `asset`, `payTo`, ' +
        '`maxTimeoutSeconds`, `extra`; on Base, while prepaid channels are offered, a ' +
        '`batch-settlement` entry after it, with `extra.minDeposit`) and `extensions.bazaar`.',
      required: true,
      schema: { type: 'string', contentEncoding: 'base64' },
    },
    PaymentResponse: {
      description:
        'Base64 of the facilitator SettleResponse JSON: `success`, `transaction`, `network`, ' +
        `\`payer\`, and \`extensions\`: \`${DELIVERY_RECEIPT}\` (\`info.receipt\`: the signed ` +
        'delivery receipt, a compact JWS of `DeliveryReceiptClaims`) and, when the call settled ' +
        `now, \`${OFFER_RECEIPT}\` (\`info.receipt\`: the official x402 offer-receipt receipt).`,
      schema: { type: 'string', contentEncoding: 'base64' },
    },
    RetryAfter: {
      description: 'Seconds to wait before retrying.',
      schema: { type: 'integer', minimum: 0 },
    },
    RateLimitPolicy: {
      description:
        'The quota of unpaid requests per client (IETF draft-ietf-httpapi-ratelimit-headers), ' +
        'e.g. `"free";q=120;w=60`: 120 requests per 60-second window.',
      schema: { type: 'string' },
    },
    RateLimit: {
      description:
        'What is left of the quota (IETF draft-ietf-httpapi-ratelimit-headers), e.g. ' +
        '`"free";r=0;t=17`: none left, the window resets in 17 seconds.',
      schema: { type: 'string' },
    },
  }
  const responses = {
    InvalidRequest: {
      description:
        'Invalid body (`invalid_json`, `invalid_request` with `issues`), a tool error (a tool ' +
        'code with `details`), or a tool that ran out of its time budget (`tool_timeout`). Never ' +
        'charged: the payment is not settled.',
      content: json(ref('Failure'), {
        example: failure('invalid_request', 'Invalid request: /algorithm Invalid option', {
          issues: [{ path: '/algorithm', message: 'Invalid option' }],
        }),
      }),
    },
    PaymentRequired: {
      description:
        'Payment required (`payment_required`) or refused (`invalid_payment`, ' +
        '`payment_verification_failed`, `duplicate_settlement`: the payment or its ' +
        '`payment-identifier` id already paid for a different input, `settlement_failed`). Pay one ' +
        `rail of the ${X402.requiredHeader} header and retry with ${X402.signatureHeader}.`,
      headers: {
        [X402.requiredHeader]: { $ref: '#/components/headers/PaymentRequired' },
        [X402.responseHeader]: { $ref: '#/components/headers/PaymentResponse' },
      },
      content: json(ref('Failure'), {
        example: failure('payment_required', 'Payment required: /hash costs 0.001 USDC', {
          input_check: { valid: true, errors: [] },
        }),
      }),
    },
    PaymentInProgress: {
      description:
        'The same payment (or `payment-identifier` id) is held by a call still in progress ' +
        '(`payment_in_progress`); nothing was charged by this request. Retry after ' +
        '`Retry-After` (1 s): once the first call settled, the retry gets its result and the ' +
        `original ${X402.responseHeader}.`,
      headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
      content: json(ref('Failure'), {
        example: failure(
          'payment_in_progress',
          'This payment is being processed by another request; retry after Retry-After for its result',
        ),
      }),
    },
    PayloadTooLarge: {
      description: `The body exceeds ${options.maxBodyBytes} bytes.`,
      content: json(ref('Failure'), {
        example: failure('payload_too_large', 'The body exceeds 1 MiB'),
      }),
    },
    RateLimited: {
      description:
        'Too many unpaid requests from this client (`rate_limited`): 402 answers, discovery, ' +
        '`/stats`, `/` and MCP requests without a payment count; paid calls never do. Retry ' +
        'after `Retry-After` seconds.',
      headers: {
        'Retry-After': { $ref: '#/components/headers/RetryAfter' },
        'RateLimit-Policy': { $ref: '#/components/headers/RateLimitPolicy' },
        RateLimit: { $ref: '#/components/headers/RateLimit' },
      },
      content: json(ref('Failure'), {
        example: failure(
          'rate_limited',
          'Too many unpaid requests: 120 per 60 s per client. Paid calls are not limited. Retry after Retry-After seconds.',
        ),
      }),
    },
    Unavailable: {
      description:
        'Nothing ran and nothing was charged: the payment facilitator is unconfigured or ' +
        'unreachable (`facilitator_unavailable`, fail-closed), every tool worker is busy and the ' +
        'queue is full (`overloaded`, answered before the payment is verified, so the same ' +
        'payment may be sent again), the shared duplicate-settlement guard is unreachable ' +
        '(`guard_unavailable`, also before verify), or the instance is shutting down (`shutting_down`, with ' +
        '`Connection: close`). Retry after `Retry-After` seconds.',
      headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
      content: json(ref('Failure'), {
        example: failure('facilitator_unavailable', 'Payment facilitator is unavailable'),
      }),
    },
  }
  return { headers, responses }
}

/** `x-payment-info` of a paid operation: the price, in USDC and per rail in atomic units. */
function paymentInfo(tool: ToolDefinition, rails: readonly PublishedRail[]) {
  return {
    price: { mode: 'fixed', currency: 'USDC', amount: toolPrice(tool).usdc },
    protocols: ['x402'],
    x402: {
      version: X402.version,
      scheme: X402.scheme,
      accepts: rails.map((rail) => ({
        network: rail.network,
        asset: rail.asset,
        payTo: rail.payTo,
        amount: tool.price,
      })),
    },
  }
}

function paidOperation(tool: ToolDefinition, rails: readonly PublishedRail[]) {
  const stem = componentStem(tool)
  const example = toolExample(tool)
  const price = toolPrice(tool)
  const limits = tool.limits.map((limit) => `- ${limit}`).join('\n')
  return {
    post: {
      operationId: tool.operationId,
      summary: `${tool.title} (${price.usdc} USDC)`,
      description:
        `${tool.description}\n\nPrice: ${price.usdc} USDC per call (\`${price.atomic}\` atomic ` +
        `units on every rail). MCP tool: \`${tool.mcpName}\`.` +
        (limits ? `\n\nLimits:\n${limits}` : ''),
      tags: ['tools'],
      requestBody: {
        required: true,
        content: json(ref(`${stem}Input`), { example: example.body }),
      },
      responses: {
        '200': {
          description:
            `Paid and settled: \`{ok: true, result}\` with the ${X402.responseHeader} settlement and ` +
            'its signed delivery receipt (see Receipts). ' +
            'Also the answer to a retry of a settled call (same payment or `payment-identifier` ' +
            `id, same input, within 120 s): the result and the original ${X402.responseHeader} ` +
            '(without `payer`), charged once.',
          headers: {
            [X402.responseHeader]: { $ref: '#/components/headers/PaymentResponse' },
          },
          content: json(ref(`${stem}Success`), { example: example.response }),
        },
        '400': { $ref: '#/components/responses/InvalidRequest' },
        '402': { $ref: '#/components/responses/PaymentRequired' },
        '409': { $ref: '#/components/responses/PaymentInProgress' },
        '413': { $ref: '#/components/responses/PayloadTooLarge' },
        '429': { $ref: '#/components/responses/RateLimited' },
        '503': { $ref: '#/components/responses/Unavailable' },
      },
      'x-payment-info': paymentInfo(tool, rails),
    },
  }
}

/** A free GET operation answering 200 with `content`. */
function freeGet(
  operationId: string,
  summary: string,
  description: string,
  tag: string,
  content: Record<string, unknown>,
  extraResponses: Record<string, unknown> = {},
) {
  return {
    get: {
      operationId,
      summary,
      description: `${description}\n\nFree. \`HEAD\` answers too; other methods answer 405.`,
      tags: [tag],
      security: [],
      responses: {
        '200': { description: summary, content },
        // /health is never rate limited: load balancers probe it.
        ...(operationId === 'health'
          ? {}
          : { '429': { $ref: '#/components/responses/RateLimited' } }),
        ...extraResponses,
      },
    },
  }
}

/** The free receipt endpoints: the keys, the DID document, the verification. */
function receiptPaths(base: string) {
  return {
    [JWKS_PATH]: freeGet(
      'receipt_keys',
      'Receipt keys (JWKS)',
      'The public keys that sign the delivery receipts and the offer-receipt offers and receipts: ' +
        'a JWK Set (RFC 7517) of Ed25519 `OKP` keys, `kid` = RFC 7638 thumbprint, the current key ' +
        'first, then the retired ones, so that a receipt signed before a key rotation keeps ' +
        'verifying. Cacheable for 5 minutes.',
      'receipts',
      { 'application/jwk-set+json': { schema: ref('Jwks') } },
    ),
    [didDocumentPath(base)]: freeGet(
      'did_document',
      'DID document (did:web)',
      'The same keys as JsonWebKey2020 verification methods of the did:web DID of this service: ' +
        `the \`kid\` of an \`${OFFER_RECEIPT}\` offer or receipt is \`<DID>#<thumbprint>\` and resolves here.`,
      'receipts',
      { 'application/did+json': { schema: { type: 'object' } } },
    ),
    [RECEIPTS_VERIFY_PATH]: {
      post: {
        operationId: 'verify_receipt',
        summary: 'Verify a delivery receipt',
        description:
          'Checks a delivery receipt: the signature (a key of the JWKS, current or retired) and ' +
          'the claims; then, when given, the digests of the input (checked against the tool schema, ' +
          'defaults applied) and of the result; and, only when the signature is ours and the input ' +
          "matches, runs the tool again at the receipt's `iat` on a worker and compares the " +
          'result. Always 200 with the verdict once the request is readable. Free; rate-limited ' +
          'like every request without a payment; the body limit of the tools applies. One ' +
          'recomputation at a time per instance: another answers 503 `overloaded`.',
        tags: ['receipts'],
        security: [],
        requestBody: {
          required: true,
          content: json(ref('ReceiptVerifyRequest'), {
            example: { receipt: 'eyJhbGciOiJFZERTQSIs…', input: { input: 'abc' } },
          }),
        },
        responses: {
          '200': {
            description: 'The verdict: `valid`, the first failure `reason`, and every check.',
            content: json(ref('ReceiptVerification')),
          },
          '400': {
            description:
              'The body is not JSON (`invalid_json`) or not `{receipt, input?, result?}` (`invalid_request`).',
            content: json(ref('Failure')),
          },
          '413': { $ref: '#/components/responses/PayloadTooLarge' },
          '429': { $ref: '#/components/responses/RateLimited' },
          '503': {
            description:
              'Another recomputation is running (`overloaded`); retry after `Retry-After`.',
            headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
            content: json(ref('Failure')),
          },
        },
      },
    },
  }
}

function freePaths(base: string, toolCount: number) {
  const text = (description: string) => ({ schema: { type: 'string', description } })
  return {
    '/': freeGet(
      'landing_page',
      'Landing page',
      'Live aggregate telemetry, the tool catalogue and a quick start.',
      'discovery',
      {
        'text/html': text('HTML page.'),
      },
    ),
    '/stats': freeGet(
      'stats',
      'Aggregate paid-usage telemetry',
      'Paid calls, payers, repeat usage, revenue and network activity. No payer or transaction identifiers. The 24-hour and 7-day revenue windows and the daily series are exact to the UTC hour (the current hour so far plus whole hours before it). Cached for a couple of seconds (`window.cache_seconds`).',
      'telemetry',
      json(ref('Stats')),
      {
        '503': {
          description: 'Telemetry storage is temporarily unavailable (`telemetry_unavailable`).',
          headers: { 'Retry-After': { $ref: '#/components/headers/RetryAfter' } },
          content: json(ref('Failure'), {
            example: {
              ok: false,
              error: 'Telemetry storage is temporarily unavailable',
              code: 'telemetry_unavailable',
              request_id: EXAMPLE_REQUEST_ID,
            },
          }),
        },
      },
    ),
    '/health': freeGet(
      'health',
      'Health',
      'For load balancers: always 200 while the process serves; `degraded` names its reasons.',
      'discovery',
      json(ref('Health')),
    ),
    '/capabilities': freeGet(
      'capabilities',
      'Capabilities',
      'Service, transports, x402 version and scheme, the rails live right now, limits and every tool.',
      'discovery',
      json(ref('Capabilities')),
    ),
    '/openapi.json': freeGet(
      'openapi',
      'This OpenAPI document',
      'The machine-readable interface description (OpenAPI 3.1).',
      'discovery',
      json({ type: 'object' }),
    ),
    '/llms.txt': freeGet(
      'llms_txt',
      'Text description for agents',
      `What the service does, the tools with prices and examples, and how to pay (llmstxt.org format). ${base}/llms.txt`,
      'discovery',
      { 'text/plain': text('Markdown text.') },
    ),
    '/robots.txt': freeGet(
      'robots_txt',
      'Robots file',
      'Allows the landing page, the statistics and the discovery files (RFC 9309).',
      'discovery',
      { 'text/plain': text('robots.txt rules.') },
    ),
    '/.well-known/x402': freeGet(
      'well_known_x402',
      'x402 payment discovery',
      'The paid resources, for x402 crawlers such as x402scan.',
      'discovery',
      json(ref('WellKnownX402')),
    ),
    [MCP_PATH]: {
      post: {
        operationId: 'mcp',
        summary: 'MCP endpoint (Streamable HTTP)',
        description:
          'Model Context Protocol over Streamable HTTP: one JSON-RPC 2.0 message per POST, answered ' +
          'with JSON. `initialize`, `ping` and `tools/list` are free; `tools/call` of the ' +
          `${toolCount} tools is paid with x402: without payment it returns an \`isError\` result holding the ` +
          `PaymentRequired; repeat it with the PaymentPayload in \`params._meta["${X402.mcpPaymentMeta}"]\`. ` +
          `The receipt is in the result's \`_meta["${X402.mcpResponseMeta}"]\`. No payment travels ` +
          'in HTTP headers here, so the operation declares no security requirement.',
        tags: ['mcp'],
        security: [],
        requestBody: {
          required: true,
          content: json(ref('JsonRpcRequest'), {
            example: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} },
          }),
        },
        responses: {
          '200': {
            description: 'A JSON-RPC 2.0 response.',
            content: json(ref('JsonRpcResponse')),
          },
          '202': { description: 'A notification or response was accepted; no body.' },
          '400': {
            description: 'Not a JSON-RPC message.',
            content: json(ref('JsonRpcResponse')),
          },
          '429': { $ref: '#/components/responses/RateLimited' },
        },
      },
    },
  }
}

/**
 * Builds the OpenAPI 3.1.0 document of the service from the tool catalogue: one paid `POST`
 * operation per tool (request and result schemas from its Zod schemas, examples computed by running
 * it, `x-payment-info` with the price), the free endpoints with `security: []`, the `/stats` schema
 * and the failure `code` enum.
 *
 * Paid operations inherit the global `x402` security requirement: an `apiKey`-style scheme naming
 * the `PAYMENT-SIGNATURE` header, which is how generic OpenAPI tooling can express "send this
 * header".
 *
 * @example
 * const doc = buildOpenApi({ tools: catalog, publicBaseUrl, rails, errorCodes, maxBodyBytes })
 * doc.paths['/hash'].post.operationId // 'hash'
 * @throws {Error} when a tool example is invalid or two components collide
 */
export function buildOpenApi(options: OpenApiOptions): OpenApiDocument {
  const base = options.publicBaseUrl
  const summary = serviceSummary(options.tools, options.rails)
  const schemas: Record<string, JsonSchema> = {}
  const paths: Record<string, unknown> = {}
  for (const tool of options.tools) {
    const stem = componentStem(tool)
    component(schemas, `${stem}Input`, toolInputSchema(tool))
    component(schemas, `${stem}Result`, toolResultSchema(tool))
    schemas[`${stem}Success`] = {
      type: 'object',
      description: `200 body of ${tool.path}.`,
      properties: { ok: { const: true }, result: ref(`${stem}Result`) },
      required: ['ok', 'result'],
    }
    paths[tool.path] = paidOperation(tool, options.rails)
  }
  const { headers, responses } = sharedComponents(options, schemas)
  component(schemas, 'Stats', statsSchema)
  component(schemas, 'Health', healthSchema)
  component(schemas, 'Capabilities', capabilitiesSchema)
  component(schemas, 'WellKnownX402', wellKnownSchema)
  component(schemas, 'DeliveryReceiptClaims', deliveryClaimsSchema)
  component(schemas, 'ReceiptVerifyRequest', verifyRequestSchema, 'input')
  schemas.ReceiptVerification = {
    ...verifyAnswerJsonSchema,
    description: 'The verdict of POST /receipts/verify.',
    properties: { ...verifyAnswerJsonSchema.properties, claims: ref('DeliveryReceiptClaims') },
  }
  schemas.Jwks = {
    type: 'object',
    description: 'JWK Set (RFC 7517) of the receipt keys.',
    properties: {
      keys: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            kty: { const: 'OKP' },
            crv: { const: 'Ed25519' },
            x: { type: 'string', description: 'The public key, base64url (RFC 8037).' },
            kid: { type: 'string', description: 'RFC 7638 thumbprint of the key.' },
            alg: { const: 'EdDSA' },
            use: { const: 'sig' },
          },
          required: ['kty', 'crv', 'x', 'kid', 'alg', 'use'],
        },
      },
    },
    required: ['keys'],
  }
  schemas.JsonRpcRequest = {
    type: 'object',
    description: 'A JSON-RPC 2.0 request or notification (MCP).',
    properties: {
      jsonrpc: { const: '2.0' },
      id: { type: ['string', 'integer'] },
      method: { type: 'string' },
      params: { type: 'object' },
    },
    required: ['jsonrpc', 'method'],
  }
  schemas.JsonRpcResponse = {
    type: 'object',
    description: 'A JSON-RPC 2.0 response (MCP): `result` or `error`.',
    properties: {
      jsonrpc: { const: '2.0' },
      id: { type: ['string', 'integer', 'null'] },
      result: { type: 'object' },
      error: {
        type: 'object',
        properties: { code: { type: 'integer' }, message: { type: 'string' } },
        required: ['code', 'message'],
      },
    },
    required: ['jsonrpc'],
  }
  Object.assign(paths, freePaths(base, options.tools.length), receiptPaths(base))

  const steps = (list: string[]) => list.map((step, i) => `${i + 1}. ${step}`).join('\n')
  return {
    openapi: '3.1.0',
    info: {
      title: SERVICE.name,
      version: SERVICE.version,
      summary,
      description:
        `${summary} No AI model and no upstream call: output is a deterministic function ` +
        'of the input. Payload contents and raw payer addresses are not stored.\n\n' +
        `## Paying over HTTP\n\n${steps(httpPaymentSteps(options.rails))}\n\n` +
        `## Paying over MCP\n\n${steps(mcpPaymentSteps(base))}\n\n` +
        `## Receipts\n\n${receiptSteps(base)
          .map((line) => `- ${line}`)
          .join('\n')}\n\n` +
        `## Limits\n\n${limitLines(options.limits)
          .map((line) => `- ${line}`)
          .join('\n')}\n- Per tool: the limits in each operation's description.\n\n` +
        `Every limit, with its configuration variable and error code: \`${LIMITS_DOC}\` in the ` +
        'service sources.\n\n' +
        `Every failure is \`{ok: false, error, code, request_id}\`; the codes are the \`ErrorCode\` enum, ` +
        'and `request_id` is also the `X-Request-Id` header of every response. ' +
        `Agents: see ${base}/llms.txt.`,
      'x-guidance': shortGuidance(base, options.rails),
    },
    servers: [{ url: base, description: 'This deployment.' }],
    tags: [
      {
        name: 'tools',
        description: `The ${options.tools.length} paid tools: POST a JSON body, pay with x402.`,
      },
      { name: 'discovery', description: 'Free: health, capabilities and discovery documents.' },
      { name: 'telemetry', description: 'Free: aggregate paid-usage statistics.' },
      { name: 'mcp', description: 'The same tools over the Model Context Protocol.' },
      {
        name: 'receipts',
        description: 'Free: the receipt keys and the verification of delivery receipts.',
      },
    ],
    security: [{ x402: [] }],
    paths,
    components: {
      schemas,
      headers,
      responses,
      securitySchemes: {
        x402: {
          type: 'apiKey',
          in: 'header',
          name: X402.signatureHeader,
          description:
            `x402 v${X402.version} payment: Base64 of a PaymentPayload JSON signed for one of the ` +
            `\`accepts\` of the 402 response's ${X402.requiredHeader} header. A new payment per call.`,
        },
      },
    },
  }
}
