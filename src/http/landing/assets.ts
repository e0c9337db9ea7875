import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { ASSET_PATHS } from './render.js'

/** One static file of the landing page, held in memory. */
export interface LandingAsset {
  /** URL path, e.g. `/assets/landing.js`. */
  path: string
  contentType: string
  body: Uint8Array<ArrayBuffer>
}

/**
 * Our own files sit in `src/http/landing/static/`. They are not TypeScript, so `tsc` does not copy
 * them to `dist/`: the URL goes up to the project root and back down into `src/`, which resolves
 * to the same folder from `src/http/landing/` (tsx, tests) and from `dist/http/landing/` (build).
 */
const STATIC_DIR = new URL('../../../src/http/landing/static/', import.meta.url)

const require = createRequire(import.meta.url)

/**
 * Reads every landing page asset once (call it at startup): the page's script, stylesheet and
 * icon, and uPlot's minified IIFE build and stylesheet from `node_modules` (served from this
 * origin: the page makes no request elsewhere).
 *
 * @example
 * loadLandingAssets().map((a) => a.path) // ['/assets/landing.css', '/assets/landing.js', …]
 * @throws {Error} (ENOENT) when a file is missing: a broken install, caught at startup
 */
export function loadLandingAssets(): LandingAsset[] {
  const own = (name: string) => new Uint8Array(readFileSync(new URL(name, STATIC_DIR)))
  const uplot = (name: string) =>
    new Uint8Array(readFileSync(require.resolve(`uplot/dist/${name}`)))
  const js = 'text/javascript; charset=utf-8'
  const css = 'text/css; charset=utf-8'
  return [
    { path: ASSET_PATHS.css, contentType: css, body: own('landing.css') },
    { path: ASSET_PATHS.script, contentType: js, body: own('landing.js') },
    { path: ASSET_PATHS.icon, contentType: 'image/svg+xml', body: own('favicon.svg') },
    { path: ASSET_PATHS.chartCss, contentType: css, body: uplot('uPlot.min.css') },
    { path: ASSET_PATHS.chartScript, contentType: js, body: uplot('uPlot.iife.min.js') },
  ]
}
