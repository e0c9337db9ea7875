import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { decodePaymentRequiredHeader } from '@x402/core/http'
import { validateDiscoveryExtension } from '@x402/extensions/bazaar'
import { afterAll, describe, expect, it } from 'vitest'
import { loadConfig } from '../src/config.js'
import { capabilitiesSchema } from '../src/descriptions/discovery/capabilities.js'
import { healthSchema } from '../src/descriptions/discovery/health-schema.js'
import { llmsExamples } from '../src/descriptions/discovery/llms-txt.js'
import { statsSchema } from '../src/descriptions/discovery/stats-schema.js'
import { wellKnownSchema } from '../src/descriptions/discovery/well-known.js'
import { SERVICE_ERROR_CODES } from '../src/descriptions/error-codes.js'
import { createApp } from '../src/http/app.js'
import { createTelemetry } from '../src/telemetry/index.js'
import { catalog } from '../src/tools/catalog.js'
import { TOOL_ERROR_CODES } from '../src/tools/errors.js'
import { FAKE_SOLANA, fakeGate, fakeRails } from './helpers/fakes.js'

// The served discovery surfaces, over the real catalogue and a payment gate on a scripted
// facilitator (test/helpers/fakes.ts). test/discovery.e2e.test.ts repeats the payment checks
// against the devnet with official x402 clients.

const BASE = 'https://tools.example'
const EVM_PROOF = `0x${'ab'.repeat(65)}`
const SOLANA_PROOF = '5'.repeat(88)

function app(options: { ownershipProofs?: string[]; supported?: string[] } = {}) {
  const { gate } = fakeGate({}, options.supported)
  return createApp({
    gate,
    tools: catalog,
    publicBaseUrl: BASE,
    rails: fakeRails,
    ...(options.ownershipProofs ? { ownershipProofs: options.ownershipProofs } : {}),
  })
}

async function get(path: string, hono = app()) {
  const res = await hono.request(path)
  expect(res.status, path).toBe(200)
  return res
}

// biome-ignore lint/suspicious/noExplicitAny: parsed JSON documents, asserted field by field
const json = async (path: string, hono = app()): Promise<any> => (await get(path, hono)).json()

const FREE = {
  '/health': 'application/json',
  '/capabilities': 'application/json',
  '/openapi.json': 'application/json',
  '/llms.txt': 'text/plain; charset=utf-8',
  '/robots.txt': 'text/plain; charset=utf-8',
  '/.well-known/x402': 'application/json',
  '/mcp/server-card': 'application/mcp-server+json',
  '/.well-known/mcp/catalog.json': 'application/json',
} as const

describe('free discovery endpoints', () => {
  it.each(Object.entries(FREE))(
    'GET %s answers 200 %s with security headers',
    async (path, type) => {
      const res = await get(path)
      expect(res.headers.get('Content-Type')).toBe(type)
      expect(res.headers.get('X-Content-Type-Options')).toBe('nosniff')
      expect(res.headers.get('Access-Control-Allow-Origin')).toBe('*')
      expect((await res.arrayBuffer()).byteLength).toBeGreaterThan(0)
    },
  )

  it.each(Object.keys(FREE))(
    'HEAD %s answers 200 without a body; PUT answers 405',
    async (path) => {
      const hono = app()
      const head = await hono.request(path, { method: 'HEAD' })
      expect(head.status).toBe(200)
      expect(await head.text()).toBe('')
      const put = await hono.request(path, { method: 'PUT', body: '{}' })
      expect(put.status).toBe(405)
      expect(put.headers.get('Allow')).toBe('GET, HEAD, OPTIONS')
      expect(await put.json()).toMatchObject({ ok: false, code: 'method_not_allowed' })
    },
  )

  it('answers GET on a paid path with 405 Allow: POST, OPTIONS', async () => {
    for (const tool of catalog) {
      const res = await app().request(tool.path)
      expect(res.status).toBe(405)
      expect(res.headers.get('Allow')).toBe('POST, OPTIONS')
    }
  })
})

describe('every catalogue entry appears in every surface', () => {
  it.each(catalog.map((tool) => [tool.id, tool] as const))('%s', async (_id, tool) => {
    const hono = app()
    const doc = await json('/openapi.json', hono)
    const op = doc.paths[tool.path].post
    expect(op.operationId).toBe(tool.operationId)
    expect(op.description).toContain(tool.mcpName)
    const stem = op.requestBody.content['application/json'].schema.$ref.split('/').pop()
    expect(doc.components.schemas[stem]).toBeDefined()
    expect(op.requestBody.content['application/json'].example).toEqual(tool.examples[0])

    const llms = await (await get('/llms.txt', hono)).text()
    expect(llms).toContain(`- [POST ${tool.path}](`)
    expect(llms).toContain(`MCP tool \`${tool.mcpName}\``)
    expect(llmsExamples(llms)).toContainEqual({ path: tool.path, body: tool.examples[0] })

    const capabilities = await json('/capabilities', hono)
    const entry = capabilities.tools.find((t: { id: string }) => t.id === tool.id)
    expect(entry).toMatchObject({
      path: tool.path,
      url: `${BASE}${tool.path}`,
      mcp_name: tool.mcpName,
      operation_id: tool.operationId,
      price: { atomic: tool.price, usdc: tool.price === '1000' ? '0.001' : '0.003' },
      input_schema: `${BASE}/openapi.json#/components/schemas/${stem}`,
    })

    const wellKnown = await json('/.well-known/x402', hono)
    expect(wellKnown.resources).toContain(`${BASE}${tool.path}`)

    const paid = await hono.request(tool.path, { method: 'POST' })
    const required = decodePaymentRequiredHeader(paid.headers.get('PAYMENT-REQUIRED') ?? '')
    const bazaar = required.extensions?.bazaar as { info: { input: { body: unknown } } }
    expect(bazaar.info.input.body).toEqual(tool.examples[0])
  })
})

describe('every paid path in /openapi.json answers an empty POST with 402', () => {
  it('decodes to x402Version 2 with both rails, the price and a valid bazaar extension', async () => {
    const hono = app()
    const doc = await json('/openapi.json', hono)
    const paid = Object.entries(doc.paths).filter(
      // biome-ignore lint/suspicious/noExplicitAny: OpenAPI path items
      ([, item]: [string, any]) => item.post?.['x-payment-info'],
    )
    expect(paid.map(([path]) => path)).toEqual(catalog.map((tool) => tool.path))
    // biome-ignore lint/suspicious/noExplicitAny: OpenAPI path items
    for (const [path, item] of paid as [string, any][]) {
      const res = await hono.request(path, { method: 'POST' })
      expect(res.status, path).toBe(402)
      expect(await res.json()).toEqual({
        ok: false,
        error: expect.stringContaining(path),
        code: 'payment_required',
        request_id: res.headers.get('x-request-id'),
      })
      const header = res.headers.get('PAYMENT-REQUIRED') ?? ''
      // Node's fetch (undici) refuses responses whose headers exceed 16 KiB in total.
      expect(header.length, path).toBeLessThan(12 * 1024)
      const required = decodePaymentRequiredHeader(header)
      expect(required.x402Version).toBe(2)
      expect(required.resource?.url).toBe(`${BASE}${path}`)
      const atomic = item.post['x-payment-info'].x402.accepts[0].amount
      expect(required.accepts.map((a) => [a.scheme, a.network, a.amount, a.payTo])).toEqual([
        ['exact', 'eip155:8453', atomic, fakeRails[0]?.payTo],
        ['exact', FAKE_SOLANA, atomic, fakeRails[1]?.payTo],
      ])
      const bazaar = required.extensions?.bazaar as Parameters<typeof validateDiscoveryExtension>[0]
      expect(validateDiscoveryExtension(bazaar), path).toEqual({ valid: true })
      expect(bazaar.info.input).toMatchObject({ type: 'http', method: 'POST', bodyType: 'json' })
    }
  })

  it('adds the free input check when the unpaid request carries a body', async () => {
    const res = await app().request('/hash', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify({ algorithm: 'MD5' }),
    })
    expect(res.status).toBe(402)
    const body = (await res.json()) as {
      input_check: { valid: boolean; errors: { path: string }[] }
    }
    expect(body.input_check.valid).toBe(false)
    expect(body.input_check.errors.map((e) => e.path)).toEqual(['/algorithm'])
  })
})

describe('the MCP server card (experimental, SEP-2127 draft)', () => {
  it('serves the card at /mcp/server-card and the MCP Catalog that points at it', async () => {
    const hono = app()
    expect(await json('/mcp/server-card', hono)).toEqual({
      $schema: 'https://static.modelcontextprotocol.io/schemas/v1/server-card.schema.json',
      name: 'example.tools/payload-tools',
      version: '0.3.0',
      description: '8 deterministic payload tools for agents, each call paid in USDC with x402.',
      title: 'Payload Tools',
      websiteUrl: `${BASE}/`,
      remotes: [
        {
          type: 'streamable-http',
          url: `${BASE}/mcp`,
          supportedProtocolVersions: [
            '2026-07-28',
            '2025-11-25',
            '2025-06-18',
            '2025-03-26',
            '2024-11-05',
            '2024-10-07',
          ],
        },
      ],
      _meta: {
        'payload-tools/experimental':
          'SEP-2127 draft (modelcontextprotocol/experimental-ext-server-card): this card may change shape or place',
        'payload-tools/tools': catalog.map((tool) => tool.mcpName),
      },
    })
    expect(await json('/.well-known/mcp/catalog.json', hono)).toEqual({
      specVersion: 'draft',
      entries: [
        {
          identifier: 'urn:mcp:server:example.tools/payload-tools',
          displayName: 'Payload Tools',
          mediaType: 'application/mcp-server+json',
          url: `${BASE}/mcp/server-card`,
        },
      ],
    })
  })

  it('is linked from /llms.txt and /.well-known/x402', async () => {
    const hono = app()
    const llms = await (await get('/llms.txt', hono)).text()
    expect(llms).toContain(
      `- [MCP server card](${BASE}/mcp/server-card) (experimental, SEP-2127 draft): where and how to connect to \`/mcp\`; [MCP Catalog](${BASE}/.well-known/mcp/catalog.json) points at it\n`,
    )
    const doc = await json('/.well-known/x402', hono)
    expect(doc.instructions).toContain(
      `Over MCP: ${BASE}/mcp (Streamable HTTP), described by its server card ${BASE}/mcp/server-card (experimental, SEP-2127 draft).`,
    )
  })
})

describe('/.well-known/x402', () => {
  it('lists the catalogue and every resource answers 402', async () => {
    const hono = app()
    const doc = await json('/.well-known/x402', hono)
    expect(wellKnownSchema.strict().parse(doc)).toEqual(doc)
    expect(doc.version).toBe(1)
    // The format's version, said to be no x402 v1: payments are x402 v2.
    expect(doc.instructions).toMatch(
      /^This document's "version" 1 is its own format's; payments use x402 v2\. /,
    )
    expect(doc.ownershipProofs).toBeUndefined()
    expect(doc.resources).toEqual(catalog.map((tool) => `${BASE}${tool.path}`))
    expect(doc.instructions).toContain('PAYMENT-SIGNATURE')
    for (const url of doc.resources as string[]) {
      const res = await hono.request(new URL(url).pathname, { method: 'POST' })
      expect(res.status, url).toBe(402)
      expect(res.headers.get('PAYMENT-REQUIRED')).toBeTruthy()
    }
  })

  it('publishes the ownership proofs of X402_OWNERSHIP_PROOFS', async () => {
    const config = loadConfig({ X402_OWNERSHIP_PROOFS: ` ${EVM_PROOF} , ${SOLANA_PROOF}` })
    expect(config.ownershipProofs).toEqual([EVM_PROOF, SOLANA_PROOF])
    const doc = await json(
      '/.well-known/x402',
      app({ ownershipProofs: config.ownershipProofs ?? [] }),
    )
    expect(doc.ownershipProofs).toEqual([EVM_PROOF, SOLANA_PROOF])
    expect(loadConfig({}).ownershipProofs).toBeUndefined()
    expect(() => loadConfig({ X402_OWNERSHIP_PROOFS: '0xabc' })).toThrow(/X402_OWNERSHIP_PROOFS/)
    expect(() => loadConfig({ X402_OWNERSHIP_PROOFS: 'not a signature' })).toThrow(
      /0x-hex or base58/,
    )
  })
})

describe('/capabilities', () => {
  it('matches its schema and lists the live rails, limits and tools', async () => {
    const body = await json('/capabilities')
    expect(capabilitiesSchema.parse(body)).toEqual(body)
    expect(body).toMatchObject({
      name: 'Payload Tools',
      version: '0.3.0',
      transports: {
        http: { base_url: BASE, method: 'POST' },
        mcp: { url: `${BASE}/mcp`, transport: 'streamable-http', payment_meta: 'x402/payment' },
      },
      x402: {
        version: 2,
        scheme: 'exact',
        rails: fakeRails.map(({ network, asset, payTo }) => ({ network, asset, payTo })),
      },
      limits: { max_body_bytes: 1_048_576 },
      receipts: {
        delivery: {
          extension: 'delivery-receipt',
          format: 'jws',
          alg: 'EdDSA',
          typ: 'delivery-receipt+jwt',
          claims: [
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
          ],
        },
        offer_receipt: { extension: 'offer-receipt', format: 'jws' },
        jwks: `${BASE}/.well-known/jwks.json`,
        did_document: `${BASE}/.well-known/did.json`,
        verify: `${BASE}/receipts/verify`,
      },
    })
    expect(body.tools.map((t: { id: string }) => t.id)).toEqual(catalog.map((t) => t.id))
    const pipeline = body.tools.find((t: { id: string }) => t.id === 'pipeline')
    expect(pipeline.fields.operations).toEqual({ min_items: 1, max_items: 12 })
    const hmac = body.tools.find((t: { id: string }) => t.id === 'hmac')
    expect(hmac.fields.secret.min_length).toBe(1)
  })

  it('lists only the rails the facilitator supports right now', async () => {
    const body = await json('/capabilities', app({ supported: ['eip155:8453'] }))
    expect(body.x402.rails.map((r: { network: string }) => r.network)).toEqual(['eip155:8453'])
    // Without prepaid channels, exact alone, and no minimum deposit.
    expect(body.x402.rails).toEqual([expect.objectContaining({ schemes: ['exact'] })])
    expect(body.x402.rails[0]).not.toHaveProperty('min_deposit')
    const none = await json('/capabilities', app({ supported: [] }))
    expect(none.x402.rails).toEqual([])
  })
})

describe('/health and /robots.txt', () => {
  it('/health matches its schema', async () => {
    const hono = app()
    await hono.request('/hash', { method: 'POST' })
    const body = await json('/health', hono)
    expect(healthSchema.parse(body)).toEqual(body)
    expect(body.status).toBe('ok')
  })

  it('/robots.txt allows the landing page and the discovery files only', async () => {
    const text = await (await get('/robots.txt')).text()
    expect(text).toBe(
      [
        'User-agent: *',
        'Allow: /$',
        'Allow: /stats$',
        'Allow: /llms.txt$',
        'Allow: /openapi.json$',
        'Allow: /capabilities$',
        'Allow: /.well-known/x402$',
        'Allow: /mcp/server-card$',
        'Allow: /.well-known/mcp/catalog.json$',
        'Disallow: /',
        '',
      ].join('\n'),
    )
  })
})

describe('error codes', () => {
  const errorsMd = readFileSync('docs/errors.md', 'utf8')
  const literal = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
  /** A Markdown table row starting with these cells, whatever the padding. */
  const row = (...cells: string[]) =>
    new RegExp(`^\\|${cells.map((cell) => ` *${literal(cell)} *\\|`).join('')}`, 'm')

  it('lists every SERVICE_ERROR_CODES code in docs/errors.md and in the OpenAPI enum', async () => {
    const doc = await json('/openapi.json')
    const enumeration: string[] = doc.components.schemas.ErrorCode.enum
    for (const [code, { status, meaning }] of Object.entries(SERVICE_ERROR_CODES)) {
      expect(errorsMd).toMatch(row(`\`${code}\``, String(status), meaning))
      expect(enumeration).toContain(code)
    }
  })

  it('lists every TOOL_ERROR_CODES code in docs/errors.md and in the OpenAPI enum', async () => {
    const doc = await json('/openapi.json')
    const enumeration: string[] = doc.components.schemas.ErrorCode.enum
    for (const [code, { tools }] of Object.entries(TOOL_ERROR_CODES)) {
      expect(errorsMd).toMatch(row(`\`${code}\``, '400', tools))
      expect(enumeration).toContain(code)
    }
  })

  it('lists in docs/errors.md every tool code of docs/tools.md', () => {
    const toolsMd = readFileSync('docs/tools.md', 'utf8')
    const codes = new Set<string>()
    for (const section of toolsMd.split('**Errors**').slice(1)) {
      const table = /\n\| *Code *\|[^\n]*\n\|[ :|-]+\|\n((?:\|[^\n]*\n)+)/.exec(section)?.[1]
      for (const line of (table ?? '').trim().split('\n')) {
        const code = /^\| *`([a-z0-9_]+)` *\|/.exec(line)?.[1]
        if (code) codes.add(code)
      }
    }
    expect(codes.size).toBeGreaterThan(10)
    for (const code of codes) expect(errorsMd, code).toMatch(row(`\`${code}\``, '400'))
  })
})

describe('/stats schema', () => {
  const dir = mkdtempSync(join(tmpdir(), 'stats-schema-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('matches what telemetry really serves, field for field', async () => {
    const telemetry = await createTelemetry({
      databaseUrl: join(dir, 'stats.sqlite'),
      salt: 'a-test-salt-of-enough-length-0123456789',
      dataDir: dir,
    })
    try {
      const payer = '0x857b06519E91e3A54538791bDbb0E22373e36b66'
      // The second call is paid by a voucher of a prepaid channel.
      for (const [outcome, scheme] of [
        ['verified', 'exact'],
        ['settled', 'exact'],
        ['verified', 'batch-settlement'],
        ['settled', 'batch-settlement'],
      ] as const) {
        await telemetry.record({
          tool: 'hash',
          transport: 'http',
          network: 'eip155:8453',
          amount: '1000',
          outcome,
          scheme,
          payer,
        })
      }
      const stats = await telemetry.stats()
      expect(Object.keys(stats)).toEqual(Object.keys(statsSchema.shape))
      expect(statsSchema.parse(stats)).toEqual(stats)
      expect(stats).toMatchObject({ paid_calls: 2, successful_paid_calls: 2, repeat_payers: 1 })
      expect(stats.channels).toEqual({
        calls: 1,
        revenue: { atomic: '1000', usdc: '0.001' },
        share_of_calls: 0.5,
      })
    } finally {
      await telemetry.close()
    }
  })
})
