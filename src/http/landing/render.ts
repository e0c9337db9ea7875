import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import { MCP_PATH, SERVICE, serviceSummary, toolPrice } from '../../descriptions/service-info.js'
import { DEVNET_WORDS, networksInWords, usdcDecimal } from '../../descriptions/words.js'
import type { Rail } from '../../payment/rails.js'
import type { Money, Stats } from '../../telemetry/index.js'
import type { ToolDefinition } from '../../tools/types.js'
import { FIGURE_GROUPS, type Figure, type NetworkRow, networkRows, statValue } from './figures.js'
import { formatCount, formatFigure, formatUpdated } from './format.js'
import { type QuickStartStep, quickStartSteps } from './quick-start.js'

/** Paths of the page's own static files (see `assets.ts`); the CSP allows only this origin. */
export const ASSET_PATHS = {
  css: '/assets/landing.css',
  script: '/assets/landing.js',
  chartCss: '/assets/uplot.min.css',
  chartScript: '/assets/uplot.min.js',
  icon: '/assets/favicon.svg',
} as const

/** Text shown instead of a figure while /stats is unavailable (never a zero). */
export const UNAVAILABLE = 'Unavailable'

/** What the landing page is rendered from. */
export interface LandingModel {
  tools: readonly ToolDefinition[]
  /**
   * Configured rails in advertising order; each gets a network card even without activity, and a
   * test network puts the testnet banner on the page.
   */
  rails: readonly LandingRail[]
  /** Base URL without trailing slash, for the quick-start commands. */
  publicBaseUrl: string
  /** Figures from /stats; `undefined` renders the unavailable state. */
  stats: Stats | undefined
  /** How often the page's script refreshes the figures, in seconds. */
  refreshSeconds: number
  /** The quick start, when computed once up front; built from the catalogue when absent. */
  quickStart?: readonly QuickStartStep[]
}

type Html = HtmlEscapedString | Promise<HtmlEscapedString>

/** A configured rail as the landing page shows it. */
export type LandingRail = Pick<Rail, 'id' | 'network' | 'name' | 'testnet' | 'devnet'>

/**
 * What the page serves, when it is not real money: a local devnet (X402_DEVNET) or a test
 * network; the title, header and banner say so. Undefined on mainnet.
 */
function stageOf(model: LandingModel): 'Devnet' | 'Testnet' | undefined {
  if (model.rails.some((rail) => rail.devnet)) return 'Devnet'
  return model.rails.some((rail) => rail.testnet) ? 'Testnet' : undefined
}

/**
 * The stage banner: on a local devnet or when any rail is a test network, naming them, so that
 * nobody takes the figures for revenue or pays with real money expecting a real service. Empty
 * on mainnet.
 */
function stageBanner(model: LandingModel): Html | string {
  if (stageOf(model) === 'Devnet') {
    const names = model.rails.map((rail) => rail.name).join(' and ')
    return html`<div class="stage-banner" role="note" aria-label="Local devnet" data-stage="devnet"><div class="wrap">
<p><strong class="stage-label">Devnet</strong> This is a demo: ${names} ${model.rails.length === 1 ? 'is' : 'are'} ${DEVNET_WORDS}. Figures and receipts come from this machine's chains.</p>
</div></div>`
  }
  const tests = model.rails.filter((rail) => rail.testnet)
  if (tests.length === 0) return ''
  const names = tests.map((rail) => rail.name).join(' and ')
  return html`<div class="stage-banner" role="note" aria-label="Test network" data-stage="testnet"><div class="wrap">
<p><strong class="stage-label">Testnet</strong> Payments here settle on ${names}: faucet USDC with no value, no real money. Figures and receipts are from the test ${tests.length === 1 ? 'network' : 'networks'}.</p>
</div></div>`
}

/** Text with `backtick` spans rendered as `<code>`; every part is escaped. */
function inlineCode(text: string): Html[] {
  return text
    .split('`')
    .map((part, i) => (i % 2 === 1 ? html`<code>${part}</code>` : html`${part}`))
}

function head(model: LandingModel): Html {
  return html`<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<meta name="description" content="${serviceSummary(model.tools, model.rails)}">
<title>${stageOf(model) ? `${stageOf(model)} · ` : ''}${SERVICE.name}: payload utilities paid per call with x402</title>
<link rel="icon" href="${ASSET_PATHS.icon}" type="image/svg+xml">
<link rel="stylesheet" href="${ASSET_PATHS.chartCss}">
<link rel="stylesheet" href="${ASSET_PATHS.css}">
<script src="${ASSET_PATHS.chartScript}" defer></script>
<script src="${ASSET_PATHS.script}" defer></script>
</head>`
}

function siteHeader(model: LandingModel): Html {
  return html`<header class="site-header">
<div class="wrap bar">
<a class="brand" href="/"><img src="${ASSET_PATHS.icon}" alt="" width="28" height="28"><span>${SERVICE.name}</span>${stageOf(model) ? html` <span class="stage-label">${stageOf(model)}</span>` : ''}</a>
<nav aria-label="Sections"><ul>
<li><a href="#live">Live usage</a></li>
<li><a href="#tools">Tools</a></li>
<li><a href="#quick-start">Quick start</a></li>
<li><a href="#api">API</a></li>
</ul></nav>
</div>
</header>`
}

function hero(model: LandingModel): Html {
  // Prices are small atomic amounts (at most 3000), exact as numbers.
  const prices = model.tools.map((tool) => Number(tool.price))
  const low = BigInt(Math.min(...prices))
  const high = BigInt(Math.max(...prices))
  const range =
    low === high ? `${usdcDecimal(low)} USDC` : `${usdcDecimal(low)} to ${usdcDecimal(high)} USDC`
  const example = model.tools[0]?.path ?? '/'
  return html`<section class="hero" aria-labelledby="title">
<div class="hero-text">
<p class="eyebrow">x402 v2 · USDC on ${model.rails.map((rail) => rail.name).join(' and ') || 'no network yet'}</p>
<h1 id="title">${SERVICE.name}</h1>
<p class="lede">${model.tools.length} deterministic payload utilities for developers and AI agents, over HTTP and MCP. Pay per call in USDC with x402: no account, no API key.</p>
<ul class="facts">
<li><strong>${range}</strong> per call</li>
<li>Deterministic: no AI model, no upstream call</li>
<li>Payloads and payer addresses are never stored</li>
</ul>
<p class="actions"><a class="button" href="#quick-start">Quick start</a><a class="button ghost" href="#tools">Tools and prices</a><a class="button ghost" href="/openapi.json">OpenAPI</a></p>
</div>
<div class="flow-card">
<h2>How a call is paid</h2>
<ol class="flow">
<li><strong>Ask.</strong> <code>POST ${example}</code> without payment answers <code>402</code>, the price in its <code>PAYMENT-REQUIRED</code> header.</li>
<li><strong>Sign.</strong> Your x402 client signs a USDC payment on ${networksInWords(model.rails, 'or')}. Nothing moves yet.</li>
<li><strong>Retry.</strong> The same request with <code>PAYMENT-SIGNATURE</code> answers <code>200</code> with the result; the payment settles and a signed receipt binding the result to the payment comes back in <code>PAYMENT-RESPONSE</code>.</li>
</ol>
</div>
</section>`
}

/** An amount as `<span class="amount">0.003</span> <span class="unit">USDC</span>`. */
function moneyHtml(value: Money): Html {
  return html`<span class="amount">${value.usdc}</span> <span class="unit">USDC</span>`
}

/** A figure's content: formatted text, amounts with their unit apart, or {@link UNAVAILABLE}. */
function figureValue(stats: Stats | undefined, figure: Figure): Html | string {
  if (!stats) return UNAVAILABLE
  const value = statValue(stats, figure.path)
  return typeof value === 'number' ? formatFigure(figure.format, value) : moneyHtml(value)
}

function figureGroups(stats: Stats | undefined): Html[] {
  return FIGURE_GROUPS.map(
    (group) => html`<section class="group group-${group.id}" aria-labelledby="group-${group.id}">
<h3 id="group-${group.id}">${group.title}</h3>
<dl class="figures" aria-live="polite">${group.figures.map(
      (figure) => html`
<div class="figure"><dt>${figure.label}</dt><dd class="value" data-stat="${figure.path}" data-format="${figure.format}">${figureValue(stats, figure)}</dd><dd class="hint">${figure.hint}</dd></div>`,
    )}
</dl>
</section>
`,
  )
}

function networkCard(row: NetworkRow, available: boolean): Html {
  const calls = available ? formatCount(row.calls) : UNAVAILABLE
  const revenue = available ? moneyHtml(row.revenue) : UNAVAILABLE
  return html`
<li class="network" data-network="${row.network}">
<h4>${row.name}</h4>
<p class="caip"><code>${row.network}</code></p>
<dl>
<div><dt>Successful calls</dt><dd class="value" data-field="calls">${calls}</dd></div>
<div><dt>Revenue</dt><dd class="value" data-field="revenue">${revenue}</dd></div>
</dl>
</li>`
}

function dailyRows(stats: Stats | undefined): Html {
  if (!stats) {
    return html`<tr><td colspan="3">${UNAVAILABLE}</td></tr>`
  }
  return html`${stats.daily.map(
    (day) =>
      html`<tr><th scope="row"><time datetime="${day.date}">${day.date}</time></th><td class="num">${formatCount(day.calls)}</td><td class="num">${day.revenue.usdc}</td></tr>`,
  )}`
}

function live(model: LandingModel): Html {
  const { stats } = model
  const state = stats ? 'available' : 'unavailable'
  const rows = networkRows(model.rails, stats)
  return html`<section id="live" class="live" aria-labelledby="live-title" data-state="${state}" data-refresh-seconds="${model.refreshSeconds}" data-notice="${noticeText()}">
<div class="section-head">
<h2 id="live-title">Live usage</h2>
<p class="status"><span class="pill" data-role="state">${stats ? 'Live' : UNAVAILABLE}</span> <span class="updated">Updated <time data-role="updated"${stats ? html` datetime="${stats.generated_at}"` : ''}>${stats ? formatUpdated(stats.generated_at) : 'never'}</time> · refreshes every ${model.refreshSeconds} s · <a href="/stats">JSON</a></span></p>
</div>
<p class="notice" role="status" data-role="notice">${stats ? '' : noticeText()}</p>
<div class="live-grid">
${figureGroups(stats)}<section class="group group-networks" aria-labelledby="group-networks">
<h3 id="group-networks">Network activity</h3>
<ul class="networks" aria-live="polite">${rows.map((row) => networkCard(row, Boolean(stats)))}
</ul>
</section>
<figure class="chart-card" aria-labelledby="chart-title">
<figcaption><h3 id="chart-title">Last 7 days</h3><p>Successful paid calls (bars) and revenue in USDC (line) per UTC day.</p></figcaption>
<div class="chart" data-role="chart" role="img" aria-label="Chart of successful paid calls and revenue per day over the last 7 days. The same figures are in the table below."></div>
<p class="chart-unavailable">The chart returns with the live figures.</p>
<details>
<summary>Daily figures as a table</summary>
<table class="daily">
<caption>Successful paid calls and revenue per UTC day, oldest first</caption>
<thead><tr><th scope="col">Date (UTC)</th><th scope="col" class="num">Calls</th><th scope="col" class="num">Revenue (USDC)</th></tr></thead>
<tbody data-role="daily">${dailyRows(stats)}</tbody>
</table>
</details>
</figure>
</div>
</section>`
}

/** The sentence shown while /stats answers 503; the page's script shows the same one. */
export function noticeText(): string {
  return 'Live figures are unavailable: the telemetry store is not answering. Paid calls are not affected; this page keeps retrying.'
}

/**
 * The catalogue table. The explicit ARIA roles keep its table semantics where the phone layout
 * turns rows into cards (`display: grid` drops them in some browsers).
 */
function toolsSection(tools: readonly ToolDefinition[]): Html {
  return html`<section id="tools" aria-labelledby="tools-title">
<div class="section-head"><h2 id="tools-title">Tools</h2></div>
<p>Every tool is a <code>POST</code> with a JSON body, answering <code>{ok: true, result}</code>. The price is the same on both rails and nothing is charged when a tool rejects its input.</p>
<table class="catalogue" role="table">
<caption>The ${tools.length} tools and their price per call</caption>
<thead role="rowgroup"><tr role="row"><th scope="col" role="columnheader">Tool</th><th scope="col" role="columnheader">What it does</th><th scope="col" role="columnheader">Call it</th><th scope="col" role="columnheader" class="num">Price (USDC)</th></tr></thead>
<tbody role="rowgroup">${tools.map(
    (tool) => html`
<tr role="row" data-tool="${tool.id}"><th scope="row" role="rowheader">${tool.title}</th><td role="cell" class="what">${tool.description}</td><td role="cell" class="endpoints"><span><span class="via">HTTP</span> <code>POST ${tool.path}</code></span> <span><span class="via">MCP</span> <code>${tool.mcpName}</code></span></td><td role="cell" class="num price">${toolPrice(tool).usdc}</td></tr>`,
  )}
</tbody>
</table>
</section>`
}

function quickStart(steps: readonly QuickStartStep[]): Html {
  return html`<section id="quick-start" aria-labelledby="quick-start-title">
<div class="section-head"><h2 id="quick-start-title">Quick start</h2></div>
<ol class="steps">${steps.map(
    (step) => html`
<li id="quick-start-${step.id}">
<h3>${step.title}</h3>
<p>${inlineCode(step.text)}</p>
<pre tabindex="0" aria-label="${step.title}: ${step.language} example"><code data-language="${step.language}">${step.code}</code></pre>
</li>`,
  )}
</ol>
</section>`
}

function apiLinks(): Html {
  const links: [string, string, string][] = [
    ['/openapi.json', 'OpenAPI 3.1', 'Schemas, examples and prices of every operation.'],
    ['/llms.txt', 'llms.txt', 'The service for language models: tools, examples, how to pay.'],
    ['/.well-known/x402', 'x402 discovery', 'The paid resources, for x402 clients and indexers.'],
    [MCP_PATH, 'MCP endpoint', 'Streamable HTTP: tools/list is free, tools/call is paid.'],
    ['/stats', 'Statistics', 'The figures above as JSON.'],
    ['/capabilities', 'Capabilities', 'Rails live right now, limits and tools.'],
    [
      '/.well-known/jwks.json',
      'Receipt keys',
      'The keys that sign every delivery receipt; POST /receipts/verify checks one for free.',
    ],
  ]
  return html`<section id="api" aria-labelledby="api-title">
<div class="section-head"><h2 id="api-title">API and discovery</h2></div>
<ul class="links">${links.map(
    ([href, title, text]) => html`
<li><a href="${href}"><span class="link-title">${title}</span> <code>${href}</code></a><p>${text}</p></li>`,
  )}
</ul>
</section>`
}

function footer(): Html {
  return html`<footer class="site-footer"><div class="wrap">
<p>${SERVICE.name} ${SERVICE.version} · x402 v2, scheme <code>exact</code> · Figures are aggregates: no payload, raw payer address or transaction is stored or shown.</p>
</div></footer>`
}

/**
 * Renders the landing page (SPEC section 1): live aggregate telemetry (every figure SPEC section 1
 * names, network activity per configured rail, a 7-day chart), the tool catalogue with USDC prices,
 * a quick start and the discovery links. Every interpolated value is HTML-escaped by `hono/html`.
 *
 * The page has no inline script or style, so that it runs under the strict CSP of `csp.ts`; its
 * script (`/assets/landing.js`) refreshes the figures from /stats every `refreshSeconds`.
 *
 * @example
 * const page = await renderLanding({ tools: catalog, rails, publicBaseUrl, stats, refreshSeconds: 5 })
 * page.startsWith('<!doctype html>') // true
 * @throws {Error} when the catalogue is empty or its first example is invalid
 */
export async function renderLanding(model: LandingModel): Promise<string> {
  const steps = model.quickStart ?? quickStartSteps(model.publicBaseUrl, model.tools, model.rails)
  const page = html`<!doctype html>
<html lang="en">
${head(model)}
<body>
<a class="skip-link" href="#main">Skip to content</a>
${stageBanner(model)}
${siteHeader(model)}
<main id="main" class="wrap">
${hero(model)}
${live(model)}
${toolsSection(model.tools)}
${quickStart(steps)}
${apiLinks()}
</main>
${footer()}
</body>
</html>
`
  return String(await page)
}
