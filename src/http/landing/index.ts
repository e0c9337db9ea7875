import type { Hono } from 'hono'
import { etag } from 'hono/etag'
import type { Stats } from '../../telemetry/index.js'
import type { ToolDefinition } from '../../tools/types.js'
import { loadLandingAssets } from './assets.js'
import { LANDING_CSP } from './csp.js'
import { quickStartSteps } from './quick-start.js'
import { type LandingRail, renderLanding } from './render.js'

export { LANDING_CSP } from './csp.js'
export {
  ASSET_PATHS,
  type LandingModel,
  type LandingRail,
  noticeText,
  renderLanding,
  UNAVAILABLE,
} from './render.js'

/** How often the page's script refreshes the figures from /stats, in seconds. */
export const LANDING_REFRESH_SECONDS = 5

/**
 * How long the server waits for /stats figures when rendering the page, in milliseconds. Past it
 * the page is sent in its unavailable state and its script catches up on the next refresh.
 */
export const LANDING_STATS_TIMEOUT_MS = 1_000

/** Static files may be cached this long, in seconds (revalidated with their ETag). */
const ASSET_MAX_AGE = 300

/** What the landing page is built from. */
export interface LandingDeps {
  tools: readonly ToolDefinition[]
  /** Configured rails in advertising order (a test network puts the testnet banner up). */
  rails: readonly LandingRail[]
  /** Base URL without trailing slash. */
  publicBaseUrl: string
  /** Aggregates, as GET /stats serves them; absent or rejecting -> the unavailable state. */
  stats?: (() => Promise<Stats>) | undefined
  /** Refresh period of the page's script, in seconds; default {@link LANDING_REFRESH_SECONDS}. */
  refreshSeconds?: number
  /** Bound on the server-side stats read, in ms; default {@link LANDING_STATS_TIMEOUT_MS}. */
  statsTimeoutMs?: number
}

/** The figures, or `undefined` when telemetry is off, fails, or takes longer than `timeoutMs`. */
async function statsWithin(
  stats: (() => Promise<Stats>) | undefined,
  timeoutMs: number,
): Promise<Stats | undefined> {
  if (!stats) return undefined
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), timeoutMs)
  })
  try {
    return await Promise.race([stats().catch(() => undefined), late])
  } finally {
    clearTimeout(timer)
  }
}

/**
 * Registers the free landing page (SPEC section 1) on GET (and so HEAD) `/`, and its static files
 * under `/assets/`. The page is rendered per request with the current figures (read once, bounded
 * by `statsTimeoutMs`), carries its own strict {@link LANDING_CSP} (the app-wide security headers
 * keep a CSP a handler set) and `Cache-Control: no-cache`. The assets are read from disk once,
 * here, and served with an ETag.
 *
 * @example
 * registerLanding(app, { tools: catalog, rails, publicBaseUrl, stats: () => telemetry.stats() })
 * @throws {Error} when an asset file is missing or the catalogue's first example is invalid
 */
export function registerLanding(app: Hono, deps: LandingDeps): void {
  const assets = loadLandingAssets()
  // Built once (it runs each tool's example), so a catalogue bug fails at start, not per request.
  const quickStart = quickStartSteps(deps.publicBaseUrl, deps.tools, deps.rails)
  const refreshSeconds = deps.refreshSeconds ?? LANDING_REFRESH_SECONDS
  const timeoutMs = deps.statsTimeoutMs ?? LANDING_STATS_TIMEOUT_MS

  app.get('/', async (c) => {
    const page = await renderLanding({
      tools: deps.tools,
      rails: deps.rails,
      publicBaseUrl: deps.publicBaseUrl,
      stats: await statsWithin(deps.stats, timeoutMs),
      refreshSeconds,
      quickStart,
    })
    return c.html(page, 200, {
      'Content-Security-Policy': LANDING_CSP,
      'Cache-Control': 'no-cache',
    })
  })

  app.use('/assets/*', etag())
  for (const asset of assets) {
    app.get(asset.path, (c) =>
      c.body(asset.body, 200, {
        'Content-Type': asset.contentType,
        'Cache-Control': `public, max-age=${ASSET_MAX_AGE}`,
      }),
    )
  }
}
