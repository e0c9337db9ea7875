import { readFileSync } from 'node:fs'
import { PAYMENT_ID_MAX_LENGTH, PAYMENT_ID_MIN_LENGTH } from '@x402/extensions/payment-identifier'
import { describe, expect, it } from 'vitest'
import { CONFIG_DEFAULTS, DERIVED_DEFAULTS } from '../src/config.js'
import { SERVICE_ERROR_CODES } from '../src/descriptions/error-codes.js'
import { MAX_TIMEOUT_SECONDS } from '../src/facilitators/link.js'
import { MAX_BODY_BYTES } from '../src/http/app.js'
import {
  HEADERS_TIMEOUT_MS,
  KEEP_ALIVE_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_CONNECTIONS_PER_CLIENT,
  REQUEST_TIMEOUT_MS,
} from '../src/http/node-server.js'
import { RATE_LIMIT_POLICY } from '../src/http/rate-limit.js'
import { MAX_RECOMPUTES_IN_FLIGHT } from '../src/http/receipts.js'
import type { JsonBounds } from '../src/json-bounds.js'
import { DUPLICATE_WINDOW_MS } from '../src/payment/guard.js'
import {
  CLOCK_SKEW_SECONDS,
  PAYMENT_BOUNDS,
  SOLANA_TRANSACTION_LIFETIME_SECONDS,
} from '../src/payment/payment-shape.js'
import { MAX_RECEIPT_CHARS, OFFER_VALIDITY_SECONDS } from '../src/receipts/index.js'
import { MESSAGE_BOUNDS } from '../src/runner/messages.js'
import { FREE_CHECK_QUEUE } from '../src/runner/runner.js'
import {
  CLOSE_FLUSH_TIMEOUT_MS,
  STATS_CACHE_MS,
  TELEMETRY_BUFFER_LIMIT,
  WRITE_TIMEOUT_MS,
} from '../src/telemetry/limits.js'
import { TOOL_ERROR_CODES } from '../src/tools/errors.js'
import { MAX_EXPECTED_HEX, MAX_SECRET_BYTES } from '../src/tools/hmac.js'
import { MAX_ERRORS, MAX_SCHEMA_BYTES, MAX_UNIQUE_ITEMS } from '../src/tools/json-validate/index.js'
import { MAX_SCHEMA_NESTING } from '../src/tools/json-validate/scan.js'
import { MAX_JWT_LENGTH } from '../src/tools/jwt-inspect.js'
import { formatBytes, MAX_JSON_DEPTH, MAX_TEXT_BYTES } from '../src/tools/limits.js'
import { MAX_INTERMEDIATE_BYTES, MAX_OPERATIONS } from '../src/tools/pipeline/index.js'
import { DIFF_TIMEOUT_MS, MAX_DIFF_BYTES, MAX_DIFF_LINES } from '../src/tools/text-diff/index.js'

// docs/limits.md must state the limits the code enforces: each row below is built from the
// constant or the config default, so changing one without the page fails here.

const doc = readFileSync(new URL('../docs/limits.md', import.meta.url), 'utf8')
const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
/** A Markdown table row whose cells, in order, start with these texts, whatever the padding. */
const row = (...cells: string[]) =>
  new RegExp(`^\\|${cells.map((cell) => ` *${literal(cell)}[^|]*\\|`).join('')}`, 'm')
const count = (n: number) => n.toLocaleString('en-US')
const ms = (n: unknown) => `${String(n)} ms`

describe('docs/limits.md', () => {
  it('states the request limits', () => {
    expect(doc).toMatch(
      row('Request body', formatBytes(MAX_BODY_BYTES), '', '`payload_too_large` (413)'),
    )
    expect(doc).toMatch(row('`PAYMENT-SIGNATURE` header', '32 KiB', '', '`invalid_payment` (402)'))
    expect(doc).toMatch(row('All request headers together', '128 KiB', '', '431'))
    expect(doc).toMatch(row('A text field', `${formatBytes(MAX_TEXT_BYTES)} of UTF-8`))
    expect(doc).toMatch(row('Nesting of any JSON field', `${MAX_JSON_DEPTH} levels`))
  })

  it('states the receipt limits', () => {
    expect(doc).toMatch(
      row(
        '`receipt` of `POST /receipts/verify`',
        formatBytes(MAX_RECEIPT_CHARS),
        '`invalid_request` (400)',
      ),
    )
    expect(doc).toMatch(
      row(
        'Recomputations of `POST /receipts/verify`',
        String(MAX_RECOMPUTES_IN_FLIGHT),
        '`overloaded` (503',
      ),
    )
    expect(doc).toMatch(
      row(
        'A signed offer in the 402',
        `${OFFER_VALIDITY_SECONDS} s, re-signed every ${OFFER_VALIDITY_SECONDS / 2} s`,
      ),
    )
  })

  it('states every per-tool limit with the value of its constant', () => {
    const text = `${formatBytes(MAX_TEXT_BYTES)} of UTF-8`
    for (const tool of ['hash', 'base64', 'hmac', 'payload-inspect']) {
      expect(doc).toMatch(row(tool, '`input`', text, '`invalid_request` (400)'))
    }
    expect(doc).toMatch(row('hmac', '`secret`', `1 character to ${formatBytes(MAX_SECRET_BYTES)}`))
    expect(doc).toMatch(row('hmac', '`expected_hex`', `${MAX_EXPECTED_HEX} hex digits`))
    expect(doc).toMatch(
      row('json-validate', '`schema` as JSON', formatBytes(MAX_SCHEMA_BYTES), '`schema_too_large`'),
    )
    expect(doc).toMatch(
      row('json-validate', '`schema` nesting', `${MAX_SCHEMA_NESTING} levels`, '`schema_too_deep`'),
    )
    expect(doc).toMatch(
      row('json-validate', 'array length', `${count(MAX_UNIQUE_ITEMS)} items`, '`value_too_large`'),
    )
    expect(doc).toMatch(row('json-validate', 'errors returned', String(MAX_ERRORS)))
    expect(doc).toMatch(row('jwt-inspect', '`token`', formatBytes(MAX_JWT_LENGTH), '`invalid_jwt`'))
    expect(doc).toMatch(
      row('text-diff', '`before`, `after`', `${formatBytes(MAX_DIFF_BYTES)} of UTF-8`),
    )
    expect(doc).toMatch(row('text-diff', '`before`, `after`', `${count(MAX_DIFF_LINES)} lines`))
    expect(doc).toMatch(row('text-diff', 'diff time', ms(DIFF_TIMEOUT_MS), '`approximate: true`'))
    expect(doc).toMatch(row('pipeline', '`operations`', `1 to ${MAX_OPERATIONS}`))
    expect(doc).toMatch(row('pipeline', '`input` as a string', text))
    expect(doc).toMatch(
      row(
        'pipeline',
        'every intermediate value',
        formatBytes(MAX_INTERMEDIATE_BYTES),
        '`intermediate_too_large`',
      ),
    )
  })

  it('states the time and capacity limits with their variables and config defaults', () => {
    expect(doc).toMatch(
      row(
        'Run time of one tool call',
        ms(CONFIG_DEFAULTS.TOOL_TIMEOUT_MS),
        '`TOOL_TIMEOUT_MS`',
        '`tool_timeout` (400)',
      ),
    )
    expect(doc).toMatch(
      row('Worker threads', DERIVED_DEFAULTS.TOOL_WORKERS ?? '', '`TOOL_WORKERS`'),
    )
    expect(doc).toMatch(
      row(
        'Tool calls queued beyond one per worker',
        DERIVED_DEFAULTS.TOOL_QUEUE_LIMIT ?? '',
        '`TOOL_QUEUE_LIMIT`',
        '`overloaded` (503',
      ),
    )
    expect(doc).toMatch(
      row(
        'Each facilitator request',
        ms(CONFIG_DEFAULTS.FACILITATOR_TIMEOUT_MS),
        '`FACILITATOR_TIMEOUT_MS`',
        '`facilitator_unavailable` (503)',
      ),
    )
    expect(doc).toMatch(row('Validity of a payment', `${MAX_TIMEOUT_SECONDS} s`))
    expect(doc).toMatch(
      row('Worst case of a paid call', `at most half of ${MAX_TIMEOUT_SECONDS} s`),
    )
    expect(doc).toMatch(
      row(
        'Replay of a settled call',
        `${DUPLICATE_WINDOW_MS / 1000} s after it settled (as above), at most ${CONFIG_DEFAULTS.REPLAY_LIMIT} times in all`,
        '`REPLAY_LIMIT`',
        '`200`',
      ),
    )
    expect(doc).toMatch(
      row(
        '`payment-identifier` id',
        `${PAYMENT_ID_MIN_LENGTH} to ${PAYMENT_ID_MAX_LENGTH} characters`,
        '',
        '`invalid_payment` (402)',
      ),
    )
    expect(doc).toMatch(
      row(
        'Each Redis command',
        ms(CONFIG_DEFAULTS.REDIS_TIMEOUT_MS),
        '`REDIS_TIMEOUT_MS`',
        '`guard_unavailable` (503',
      ),
    )
    expect(doc).toMatch(
      row(
        'Graceful shutdown',
        ms(CONFIG_DEFAULTS.SHUTDOWN_TIMEOUT_MS),
        '`SHUTDOWN_TIMEOUT_MS`',
        '`shutting_down` (503',
      ),
    )
    expect(doc).toMatch(
      row(
        'Worst case of a paid call: wait for a checker thread + input check + verify + wait + run + settle',
        `at most half of ${MAX_TIMEOUT_SECONDS} s`,
      ),
    )
    expect(doc).toMatch(
      row(
        'Reuse of a payment',
        `${DUPLICATE_WINDOW_MS / 1000} s after it was sent to settlement, and for as long as the payment could be presented (an EIP-3009 \`validBefore\` + ${CLOCK_SKEW_SECONDS} s; a Solana transaction ${SOLANA_TRANSACTION_LIFETIME_SECONDS} s + ${CLOCK_SKEW_SECONDS} s)`,
      ),
    )
    expect(doc).toMatch(row('Free input checks of unpaid bodies', `1 + ${FREE_CHECK_QUEUE}`))
  })

  it('states the bounds of what arrives before any payment is verified', () => {
    const bounds = (b: JsonBounds) =>
      `depth ${b.depth}, ${count(b.nodes)} values, ${b.members} members per object or array`
    expect(doc).toMatch(
      row(
        "A PaymentPayload's JSON",
        `${bounds(PAYMENT_BOUNDS)}, ${count(PAYMENT_BOUNDS.string)} characters per string`,
        '',
        '`invalid_payment` (402)',
      ),
    )
    expect(doc).toMatch(
      row(
        "An EIP-3009 authorization's validity",
        `\`maxTimeoutSeconds\` + ${CLOCK_SKEW_SECONDS} s of clock skew`,
        '',
        '`invalid_payment` (402), before verify',
      ),
    )
    expect(doc).toMatch(row("An MCP request's JSON-RPC", bounds(MESSAGE_BOUNDS), '', 'HTTP 400'))
  })

  it('states the connection limits with their variables, the config defaults and nginx', () => {
    expect(doc).toMatch(row("Time to send a request's head", ms(HEADERS_TIMEOUT_MS)))
    expect(doc).toMatch(row('Time to send a whole request', ms(REQUEST_TIMEOUT_MS)))
    expect(doc).toMatch(row('Idle time of a kept-alive connection', ms(KEEP_ALIVE_TIMEOUT_MS)))
    // listen's defaults (the dev demo, benchmarks) are the configuration's.
    expect(CONFIG_DEFAULTS.MAX_CONNECTIONS).toBe(MAX_CONNECTIONS)
    expect(DERIVED_DEFAULTS.MAX_CONNECTIONS_PER_CLIENT).toContain(
      `\`${MAX_CONNECTIONS_PER_CLIENT}\``,
    )
    expect(doc).toMatch(
      row('Connections open at once, per instance', count(MAX_CONNECTIONS), '`MAX_CONNECTIONS`'),
    )
    expect(doc).toMatch(
      row(
        'Connections open at once per client',
        `${MAX_CONNECTIONS_PER_CLIENT}; 0 (none) when \`TRUST_PROXY_HOPS\` > 0`,
        '`MAX_CONNECTIONS_PER_CLIENT`',
        'a new connection is reset',
      ),
    )
    // The shipped nginx caps each client address at the same number.
    const nginx = readFileSync(new URL('../deploy/nginx.conf', import.meta.url), 'utf8')
    expect(nginx).toMatch(
      new RegExp(`^\\s*limit_conn per_client ${MAX_CONNECTIONS_PER_CLIENT};$`, 'm'),
    )
    expect(nginx).toMatch(/^\s*limit_conn_status 429;$/m)
    expect(nginx).toContain(`at most ${MAX_CONNECTIONS_PER_CLIENT} at once`)
    expect(nginx).toMatch(
      new RegExp(`^\\s*client_header_timeout ${HEADERS_TIMEOUT_MS / 1000}s;$`, 'm'),
    )
    expect(doc).toMatch(
      row('Requests in progress at once per client address', String(MAX_CONNECTIONS_PER_CLIENT)),
    )
  })

  it('states the rate limits with their variables and config defaults', () => {
    expect(doc).toMatch(
      row(
        'Points per client, per window',
        String(CONFIG_DEFAULTS.RATE_LIMIT_POINTS),
        '`RATE_LIMIT_POINTS`',
        '`rate_limited` (429)',
      ),
    )
    expect(doc).toMatch(
      row('Window', `${CONFIG_DEFAULTS.RATE_LIMIT_DURATION_S} s`, '`RATE_LIMIT_DURATION_S`'),
    )
    expect(doc).toMatch(
      row('Proxies trusted', String(CONFIG_DEFAULTS.TRUST_PROXY_HOPS), '`TRUST_PROXY_HOPS`'),
    )
    expect(doc).toContain(
      `"${RATE_LIMIT_POLICY}";q=${CONFIG_DEFAULTS.RATE_LIMIT_POINTS};w=${CONFIG_DEFAULTS.RATE_LIMIT_DURATION_S}`,
    )
  })

  it('states the telemetry bounds', () => {
    expect(doc).toMatch(row('Events buffered', count(TELEMETRY_BUFFER_LIMIT)))
    expect(doc).toMatch(row('One write to the store', ms(WRITE_TIMEOUT_MS)))
    expect(doc).toMatch(row('`/stats` freshness', `${STATS_CACHE_MS / 1000} s cache`))
    expect(doc).toMatch(row('Flush of the buffer at shutdown', ms(CLOSE_FLUSH_TIMEOUT_MS)))
  })

  it('names only codes that exist, with their statuses', () => {
    const known = new Map<string, number>([
      ...Object.entries(SERVICE_ERROR_CODES).map(([c, { status }]) => [c, status] as const),
      ...Object.keys(TOOL_ERROR_CODES).map((c) => [c, 400] as const),
    ])
    const named = [...doc.matchAll(/`([a-z_]+)` \((\d{3})\)/g)]
    expect(named.length).toBeGreaterThan(15)
    for (const [, code, status] of named)
      expect(known.get(code as string), code).toBe(Number(status))
  })
})
