import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { promisify } from 'node:util'
import SwaggerParser from '@apidevtools/swagger-parser'
import { afterAll, describe, expect, it } from 'vitest'
import { fakeRails } from '../../../test/helpers/fakes.js'
import { catalog } from '../../tools/catalog.js'
import { TOOL_ERROR_CODES } from '../../tools/errors.js'
import { allErrorCodes, SERVICE_ERROR_CODES } from '../error-codes.js'
import { serviceLimits } from '../limits.js'
import { buildOpenApi } from './openapi.js'

const BASE = 'http://127.0.0.1:8402'
const doc = buildOpenApi({
  tools: catalog,
  publicBaseUrl: BASE,
  rails: fakeRails,
  errorCodes: allErrorCodes(),
  maxBodyBytes: 1024 * 1024,
  limits: serviceLimits({ maxBodyBytes: 1024 * 1024, workers: 2, timeoutMs: 2000, queueLimit: 4 }),
})
/** The value at `keys` in the document; throws when a key is missing. */
function at(...keys: string[]): unknown {
  let value: unknown = doc
  for (const key of keys) {
    if (value === null || typeof value !== 'object' || !(key in value)) {
      throw new Error(`no ${keys.join(' > ')} in the document`)
    }
    value = (value as Record<string, unknown>)[key]
  }
  return value
}

/** The keys of the object at `keys`, in document order. */
const keysAt = (...keys: string[]) => Object.keys(at(...keys) as object)

/** SPEC 4.1: path -> operationId and atomic price. */
const SPEC_PAID = {
  '/hash': ['hash', '1000'],
  '/base64': ['base64', '1000'],
  '/hmac': ['hmac', '1000'],
  '/json-validate': ['json_validate', '1000'],
  '/jwt-inspect': ['jwt_inspect', '1000'],
  '/text-diff': ['text_diff', '1000'],
  '/pipeline': ['pipeline', '3000'],
  '/payload-inspect': ['payload_inspect', '3000'],
} as const

const FREE = [
  '/.well-known/jwks.json',
  '/.well-known/did.json',
  '/',
  '/stats',
  '/health',
  '/capabilities',
  '/openapi.json',
  '/llms.txt',
  '/robots.txt',
  '/.well-known/x402',
]

const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('OpenAPI document', () => {
  it('is OpenAPI 3.1.0 with info.version 0.3.0 and the guidance', () => {
    expect(doc.openapi).toBe('3.1.0')
    const info = doc.info as Record<string, string>
    expect(info.version).toBe('0.3.0')
    expect(info.title).toBe('Payload Tools')
    expect(info['x-guidance']).toContain('PAYMENT-SIGNATURE')
    expect(doc.servers).toEqual([{ url: BASE, description: 'This deployment.' }])
  })

  it('validates with @apidevtools/swagger-parser', async () => {
    await expect(SwaggerParser.validate(structuredClone(doc) as never)).resolves.toBeTruthy()
  })

  it('lints clean with @redocly/cli (no error, no warning)', async () => {
    const file = join(dir, 'openapi.json')
    writeFileSync(file, JSON.stringify(doc))
    const cli = resolve('node_modules/@redocly/cli/bin/cli.js')
    const run = promisify(execFile)
    const { stdout } = await run(
      process.execPath,
      [cli, 'lint', file, '--config', resolve('redocly.yaml'), '--format', 'json'],
      {
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    ).catch((error: { stdout?: string }) => ({ stdout: error.stdout ?? '' }))
    const report = JSON.parse(stdout) as {
      totals: { errors: number; warnings: number }
      problems: { ruleId: string; message: string }[]
    }
    expect(report.problems.map((p) => `${p.ruleId}: ${p.message}`)).toEqual([])
    expect(report.totals).toMatchObject({ errors: 0, warnings: 0 })
  })

  it('has exactly the SPEC 4.1 operationIds on the paid POST paths', () => {
    const paid = keysAt('paths')
      .filter((path) => keysAt('paths', path).includes('post'))
      .filter((path) => keysAt('paths', path, 'post').includes('x-payment-info'))
      .map((path) => [path, at('paths', path, 'post', 'operationId')])
    expect(Object.fromEntries(paid)).toEqual(
      Object.fromEntries(Object.entries(SPEC_PAID).map(([path, [id]]) => [path, id])),
    )
  })

  it('prices every paid operation in USDC and per rail in atomic units', () => {
    for (const [path, [, atomic]] of Object.entries(SPEC_PAID)) {
      expect(at('paths', path, 'post', 'x-payment-info')).toEqual({
        price: { mode: 'fixed', currency: 'USDC', amount: atomic === '1000' ? '0.001' : '0.003' },
        protocols: ['x402'],
        x402: {
          version: 2,
          scheme: 'exact',
          accepts: [
            {
              network: 'eip155:8453',
              asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
              payTo: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
              amount: atomic,
            },
            {
              network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
              asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
              payTo: '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4',
              amount: atomic,
            },
          ],
        },
      })
    }
  })

  it('gives paid operations the x402 security and the 200/400/402/409/413/429/503 responses', () => {
    expect(doc.security).toEqual([{ x402: [] }])
    expect(at('components', 'securitySchemes', 'x402')).toMatchObject({
      type: 'apiKey',
      in: 'header',
      name: 'PAYMENT-SIGNATURE',
    })
    for (const path of Object.keys(SPEC_PAID)) {
      expect(keysAt('paths', path, 'post')).not.toContain('security')
      expect(keysAt('paths', path, 'post', 'responses')).toEqual([
        '200',
        '400',
        '402',
        '409',
        '413',
        '429',
        '503',
      ])
      expect(at('paths', path, 'post', 'requestBody', 'required')).toBe(true)
    }
    expect(keysAt('components', 'responses', 'PaymentRequired', 'headers')).toEqual([
      'PAYMENT-REQUIRED',
      'PAYMENT-RESPONSE',
    ])
    expect(at('components', 'headers', 'PaymentRequired', 'required')).toBe(true)
  })

  it('marks every free operation with security: []', () => {
    for (const path of FREE) expect(at('paths', path, 'get', 'security'), path).toEqual([])
    expect(at('paths', '/mcp', 'post', 'security')).toEqual([])
    expect(at('paths', '/receipts/verify', 'post', 'security')).toEqual([])
    expect(keysAt('paths').sort()).toEqual(
      [...Object.keys(SPEC_PAID), ...FREE, '/mcp', '/receipts/verify'].sort(),
    )
  })

  it('documents the receipt: its claims, where it travels, the keys and its verification', () => {
    expect(keysAt('components', 'schemas', 'DeliveryReceiptClaims', 'properties')).toEqual([
      'iss',
      'iat',
      'resource',
      'tool',
      'input_sha256',
      'result_sha256',
      'network',
      'asset',
      'amount',
      'pay_to',
      'transaction',
      'channel',
      'cumulative',
    ])
    expect(at('components', 'headers', 'PaymentResponse', 'description')).toContain(
      '`delivery-receipt` (`info.receipt`',
    )
    expect(at('paths', '/receipts/verify', 'post', 'requestBody', 'content')).toMatchObject({
      'application/json': { schema: { $ref: '#/components/schemas/ReceiptVerifyRequest' } },
    })
    expect(keysAt('components', 'schemas', 'ReceiptVerifyRequest', 'properties')).toEqual([
      'receipt',
      'input',
      'result',
    ])
    expect(keysAt('paths', '/.well-known/jwks.json', 'get', 'responses', '200', 'content')).toEqual(
      ['application/jwk-set+json'],
    )
    expect((doc.info as { description: string }).description).toContain('## Receipts')
  })

  it('documents / as HTML and /mcp as JSON-RPC over POST', () => {
    expect(keysAt('paths', '/', 'get', 'responses', '200', 'content')).toEqual(['text/html'])
    expect(at('paths', '/mcp', 'post', 'description')).toContain('_meta["x402/payment"]')
    expect(keysAt('paths', '/mcp', 'post', 'requestBody', 'content')).toEqual(['application/json'])
  })

  it('lists every service and tool error code in the ErrorCode enum, and only those', () => {
    const schema = ['components', 'schemas', 'ErrorCode']
    expect(at(...schema, 'enum')).toEqual([
      ...Object.keys(SERVICE_ERROR_CODES),
      ...Object.keys(TOOL_ERROR_CODES),
    ])
    expect(at(...schema, 'x-enumDescriptions', 'method_not_allowed')).toBe(
      `405 (service): ${SERVICE_ERROR_CODES.method_not_allowed.meaning}`,
    )
    expect(at(...schema, 'x-enumDescriptions', 'invalid_hex')).toBe(
      `400 (pipeline): ${TOOL_ERROR_CODES.invalid_hex.meaning}`,
    )
    expect(at('components', 'schemas', 'Failure', 'properties', 'code')).toEqual({
      $ref: '#/components/schemas/ErrorCode',
    })
  })

  it('describes the /stats body with exactly the telemetry fields, and its 503', () => {
    const stats = ['components', 'schemas', 'Stats']
    const fields = [
      'paid_calls',
      'successful_paid_calls',
      'unique_payers',
      'repeat_payers',
      'repeat_paid_calls',
      'repeat_call_rate',
      'revenue',
      'networks',
      'tools',
      'channels',
      'daily',
      'generated_at',
      'window',
    ]
    expect(keysAt(...stats, 'properties')).toEqual(fields)
    expect(at(...stats, 'required')).toEqual(fields)
    expect(at(...stats, 'properties', 'repeat_call_rate', 'type')).toBe('number')
    expect(at(...stats, 'properties', 'paid_calls', 'type')).toBe('integer')
    const revenue = [...stats, 'properties', 'revenue', 'properties']
    expect(keysAt(...revenue)).toEqual(['lifetime', 'last_24h', 'last_7d'])
    expect(keysAt(...revenue, 'lifetime', 'properties')).toEqual(['atomic', 'usdc'])
    // The windows' granularity is documented where a client reads the figure.
    expect(at(...revenue, 'last_24h', 'description')).toContain('exact to the hour')
    expect(at(...revenue, 'last_7d', 'description')).toContain('exact to the hour')
    expect(at(...stats, 'properties', 'daily')).toMatchObject({
      type: 'array',
      minItems: 7,
      maxItems: 7,
    })
    expect(keysAt(...stats, 'properties', 'daily', 'items', 'properties')).toEqual([
      'date',
      'calls',
      'revenue',
    ])
    // Channels: aggregate figures only, nothing that names a payer or a channel.
    const channels = [...stats, 'properties', 'channels']
    expect(keysAt(...channels, 'properties')).toEqual(['calls', 'revenue', 'share_of_calls'])
    expect(at(...channels, 'required')).toEqual(['calls', 'revenue', 'share_of_calls'])
    expect(at(...channels, 'additionalProperties')).toBe(false)
    expect(at(...channels, 'properties', 'calls', 'type')).toBe('integer')
    expect(at(...channels, 'properties', 'share_of_calls')).toMatchObject({
      type: 'number',
      minimum: 0,
      maximum: 1,
    })
    expect(keysAt(...channels, 'properties', 'revenue', 'properties')).toEqual(['atomic', 'usdc'])
    expect(at(...channels, 'description')).toContain('batch-settlement')
    expect(keysAt(...stats, 'properties', 'window', 'properties')).toEqual([
      'last_24h',
      'last_7d',
      'daily',
      'cache_seconds',
    ])
    const example = ['paths', '/stats', 'get', 'responses', '503', 'content', 'application/json']
    expect(at(...example, 'example', 'code')).toBe('telemetry_unavailable')
  })

  it('takes each request schema from the Zod input schema (fields with defaults optional)', () => {
    const schemas = ['components', 'schemas']
    expect(keysAt(...schemas, 'HashInput')).not.toContain('required')
    expect(keysAt(...schemas, 'HashInput', 'properties')).toEqual(['input', 'algorithm'])
    expect(at(...schemas, 'HmacInput', 'required')).toEqual(['secret'])
    expect(at(...schemas, 'PipelineInput', 'properties', 'operations')).toMatchObject({
      minItems: 1,
      maxItems: 12,
    })
  })
})
