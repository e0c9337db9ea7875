import type { Context, Hono } from 'hono'
import { buildCapabilities } from '../descriptions/discovery/capabilities.js'
import { buildLlmsTxt } from '../descriptions/discovery/llms-txt.js'
import { buildOpenApi } from '../descriptions/discovery/openapi.js'
import { buildRobotsTxt } from '../descriptions/discovery/robots.js'
import { buildWellKnown } from '../descriptions/discovery/well-known.js'
import { allErrorCodes, type ErrorCodeDoc } from '../descriptions/error-codes.js'
import { serviceLimits } from '../descriptions/limits.js'
import {
  buildMcpCatalog,
  buildServerCard,
  MCP_CATALOG_PATH,
  SERVER_CARD_MEDIA_TYPE,
  SERVER_CARD_PATH,
} from '../descriptions/mcp/server-card.js'
import { X402 } from '../descriptions/service-info.js'
import type { FacilitatorLink } from '../facilitators/link.js'
import type { Rail } from '../payment/rails.js'
import type { ToolRunnerOptions } from '../runner/runner.js'
import type { ToolDefinition } from '../tools/types.js'
import type { RateLimitQuota } from './rate-limit.js'

/** What the discovery endpoints are built from. */
export interface DiscoveryDeps {
  tools: readonly ToolDefinition[]
  /** Base URL without trailing slash. */
  publicBaseUrl: string
  /**
   * Configured rails, in advertising order: OpenAPI `x-payment-info`, and the networks every
   * document names (test networks marked).
   */
  rails: readonly Rail[]
  /** The facilitator link: /capabilities lists the rails it settles right now. */
  link: FacilitatorLink
  /** Largest accepted request body, in bytes. */
  maxBodyBytes: number
  /** Workers, time budget and queue of the tool runner, published as limits. */
  runner: Pick<ToolRunnerOptions, 'workers' | 'timeoutMs' | 'queueLimit'>
  /** Every failure `code` (OpenAPI enum, llms.txt); defaults to the service codes. */
  errorCodes?: readonly ErrorCodeDoc[] | undefined
  /** Signatures over the origin by the payTo keys, for /.well-known/x402. */
  ownershipProofs?: readonly string[] | undefined
  /** The rate limit on free work, published as a limit; absent: none. */
  rateLimit?: RateLimitQuota | undefined
  /** Prepaid channels are configured (BATCH_SETTLEMENT): llms.txt says how to pay by voucher. */
  channels?: boolean | undefined
}

/** Free GET paths that crawlers may fetch (robots.txt `Allow`), besides the landing page. */
export const CRAWLABLE_PATHS = [
  '/stats',
  '/llms.txt',
  '/openapi.json',
  '/capabilities',
  '/.well-known/x402',
  SERVER_CARD_PATH,
  MCP_CATALOG_PATH,
] as const

/** Static documents may be cached this long, in seconds. */
const STATIC_MAX_AGE = 300
/** /capabilities lists live rails: a short cache, in seconds. */
const LIVE_MAX_AGE = 30

function serve(c: Context, body: string, contentType: string, maxAge: number): Response {
  return c.body(body, 200, {
    'Content-Type': contentType,
    'Cache-Control': `public, max-age=${maxAge}`,
  })
}

/**
 * Registers the free discovery endpoints (SPEC 4.2) on GET, and so on HEAD: `/openapi.json`,
 * `/llms.txt`, `/capabilities`, `/.well-known/x402`, `/robots.txt`, and, experimental (SEP-2127
 * draft), the MCP server card at `/mcp/server-card` and the MCP Catalog at
 * `/.well-known/mcp/catalog.json` that points at it. Other methods fall through to
 * the app's method-aware not-found handler (405 with `Allow`).
 *
 * Every document is generated from the catalogue once, here, so a catalogue bug (an example that
 * does not validate, a component name clash) fails at start rather than per request. Only
 * /capabilities is computed per request, for its live rails.
 *
 * @example
 * registerDiscovery(app, { tools: catalog, publicBaseUrl, rails, link: gate.link, maxBodyBytes })
 * @throws {Error} when a document cannot be built from the catalogue
 */
export function registerDiscovery(app: Hono, deps: DiscoveryDeps): void {
  const errorCodes = deps.errorCodes ?? allErrorCodes()
  const base = { tools: deps.tools, publicBaseUrl: deps.publicBaseUrl }
  const limits = serviceLimits({
    maxBodyBytes: deps.maxBodyBytes,
    ...deps.runner,
    ...(deps.rateLimit ? { rateLimit: deps.rateLimit } : {}),
  })
  const openapi = JSON.stringify(
    buildOpenApi({
      ...base,
      rails: deps.rails,
      errorCodes,
      maxBodyBytes: deps.maxBodyBytes,
      limits,
    }),
  )
  const { rails } = deps
  const llms = buildLlmsTxt({
    ...base,
    errorCodes,
    maxBodyBytes: deps.maxBodyBytes,
    limits,
    rails,
    ...(deps.channels ? { channels: true } : {}),
  })
  const wellKnown = JSON.stringify(
    buildWellKnown({ ...base, ownershipProofs: deps.ownershipProofs, rails }),
  )
  const robots = buildRobotsTxt(CRAWLABLE_PATHS)
  const card = buildServerCard(base)
  const serverCard = JSON.stringify(card)
  const mcpCatalog = JSON.stringify(buildMcpCatalog(card, deps.publicBaseUrl))
  const capabilities = buildCapabilities({ ...base, maxBodyBytes: deps.maxBodyBytes, rails })

  app.get('/openapi.json', (c) => serve(c, openapi, 'application/json', STATIC_MAX_AGE))
  app.get('/llms.txt', (c) => serve(c, llms, 'text/plain; charset=utf-8', STATIC_MAX_AGE))
  app.get('/.well-known/x402', (c) => serve(c, wellKnown, 'application/json', STATIC_MAX_AGE))
  app.get('/robots.txt', (c) => serve(c, robots, 'text/plain; charset=utf-8', STATIC_MAX_AGE))
  app.get(SERVER_CARD_PATH, (c) => serve(c, serverCard, SERVER_CARD_MEDIA_TYPE, STATIC_MAX_AGE))
  app.get(MCP_CATALOG_PATH, (c) => serve(c, mcpCatalog, 'application/json', STATIC_MAX_AGE))
  app.get('/capabilities', async (c) => {
    // ready() is cached while the facilitator is healthy, and fails fast while it is down; the
    // offered requirements are cached per price and per scheme set.
    const offered = await deps.link.ready().then(
      async (state) => {
        const accepts = await state.accepts(deps.tools[0]?.price ?? '0')
        return new Map(
          state.liveRails.map((rail) => {
            const own = accepts.filter((a) => a.network === rail.network)
            const minDeposit = own.find((a) => a.scheme !== X402.scheme)?.extra?.minDeposit
            return [
              rail.network,
              {
                schemes: own.map((a) => a.scheme),
                ...(typeof minDeposit === 'string' ? { minDeposit } : {}),
              },
            ] as const
          }),
        )
      },
      () => new Map<string, { schemes: string[]; minDeposit?: string }>(),
    )
    const live = rails.flatMap((rail) => {
      const schemes = offered.get(rail.network)
      return schemes ? [{ ...rail, ...schemes }] : []
    })
    return serve(c, JSON.stringify(capabilities(live)), 'application/json', LIVE_MAX_AGE)
  })
}
