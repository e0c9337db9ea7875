import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import type { Stats } from '../../telemetry/index.js'
import { catalog } from '../../tools/catalog.js'
import type { ToolDefinition } from '../../tools/types.js'
import { renderLanding } from './render.js'

const BASE = 'eip155:8453'
const SOLANA = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'
const RAILS = [
  { id: 'evm', network: BASE, name: 'Base', testnet: false },
  { id: 'solana', network: SOLANA, name: 'Solana', testnet: false },
] as const

const m = (atomic: string, usdc: string) => ({ atomic, usdc })

/** A hand-written /stats body. */
const STATS: Stats = {
  paid_calls: 1234,
  successful_paid_calls: 1200,
  unique_payers: 7,
  repeat_payers: 3,
  repeat_paid_calls: 300,
  repeat_call_rate: 0.25,
  revenue: {
    lifetime: m('1250000', '1.25'),
    last_24h: m('6000', '0.006'),
    last_7d: m('40000', '0.04'),
  },
  // No Solana entry: its card must be zero-filled. A network no rail names is listed after.
  networks: {
    [BASE]: { calls: 1150, revenue: m('1200000', '1.2') },
    'eip155:84532': { calls: 50, revenue: m('50000', '0.05') },
  },
  tools: { hash: { calls: 1200 } },
  channels: { calls: 1000, revenue: m('1000000', '1'), share_of_calls: 1000 / 1200 },
  daily: [
    { date: '2025-06-09', calls: 0, revenue: m('0', '0') },
    { date: '2025-06-10', calls: 1, revenue: m('1000', '0.001') },
    { date: '2025-06-11', calls: 0, revenue: m('0', '0') },
    { date: '2025-06-12', calls: 0, revenue: m('0', '0') },
    { date: '2025-06-13', calls: 1000, revenue: m('1000000', '1') },
    { date: '2025-06-14', calls: 0, revenue: m('0', '0') },
    { date: '2025-06-15', calls: 6, revenue: m('6000', '0.006') },
  ],
  generated_at: '2025-06-15T12:00:05.123Z',
  window: { last_24h: 'a', last_7d: 'b', daily: 'c', cache_seconds: 2 },
}

const render = (overrides: Partial<Parameters<typeof renderLanding>[0]> = {}) =>
  renderLanding({
    tools: catalog,
    rails: RAILS,
    publicBaseUrl: 'https://tools.example',
    stats: STATS,
    refreshSeconds: 5,
    ...overrides,
  })

/** Visible text of markup: tags removed, the five escapes undone. */
const text = (markup: string) =>
  markup
    .replace(/<[^>]*>/g, '')
    .replaceAll('&lt;', '<')
    .replaceAll('&gt;', '>')
    .replaceAll('&quot;', '"')
    .replaceAll('&#39;', "'")
    .replaceAll('&amp;', '&')

/** Text of the element carrying `data-stat="path"`. */
function figure(page: string, path: string): string {
  const match = new RegExp(`data-stat="${path}"[^>]*>(.*?)</dd>`).exec(page)
  if (!match?.[1]) throw new Error(`no figure ${path}`)
  return text(match[1])
}

/** Name, calls and revenue of every network card, in page order. */
function networks(page: string): string[][] {
  return [
    ...page.matchAll(
      /data-network="([^"]*)">\s*<h4>(.*?)<\/h4>[\s\S]*?data-field="calls">(.*?)<\/dd>[\s\S]*?data-field="revenue">(.*?)<\/dd>/g,
    ),
  ].map((r) => [r[1], r[2], r[3], r[4]].map((s) => text(s ?? '')))
}

describe('renderLanding', () => {
  it('shows every SPEC section 1 figure, formatted', async () => {
    const page = await render()
    expect(
      [
        'paid_calls',
        'successful_paid_calls',
        'unique_payers',
        'repeat_payers',
        'repeat_paid_calls',
        'repeat_call_rate',
        'revenue.lifetime',
        'revenue.last_24h',
        'revenue.last_7d',
      ].map((path) => figure(page, path)),
    ).toEqual(['1,234', '1,200', '7', '3', '300', '25.0%', '1.25 USDC', '0.006 USDC', '0.04 USDC'])
    expect(page).toContain('data-state="available"')
    expect(page).toContain(
      '<time data-role="updated" datetime="2025-06-15T12:00:05.123Z">12:00:05 UTC</time>',
    )
  })

  it('says the 24-hour and 7-day windows are counted by the UTC hour', async () => {
    const page = await render()
    expect(page).toContain(
      '<dd class="hint">Settled this UTC hour and the 23 whole hours before it (counted by the hour)</dd>',
    )
    expect(page).toContain(
      '<dd class="hint">Settled this UTC hour and the 167 whole hours before it (counted by the hour)</dd>',
    )
  })

  it('shows the calls and revenue that came through prepaid channels, in their groups', async () => {
    const page = await render()
    expect([figure(page, 'channels.calls'), figure(page, 'channels.revenue')]).toEqual([
      '1,000',
      '1 USDC',
    ])
    const group = (id: string) =>
      new RegExp(`<section class="group group-${id}"[\\s\\S]*?</section>`).exec(page)?.[0] ?? ''
    expect(group('calls')).toContain('data-stat="channels.calls"')
    expect(group('revenue')).toContain('data-stat="channels.revenue"')
    expect(group('calls')).toContain(
      '<dt>Via prepaid channels</dt><dd class="value" data-stat="channels.calls" data-format="count">',
    )
    expect(group('revenue')).toContain(
      '<dt>Via prepaid channels</dt><dd class="value" data-stat="channels.revenue" data-format="usdc">',
    )
  })

  it('shows both rails zero-filled, then other networks /stats reports', async () => {
    expect(networks(await render())).toEqual([
      [BASE, 'Base', '1,150', '1.2 USDC'],
      [SOLANA, 'Solana', '0', '0 USDC'],
      ['eip155:84532', 'Base Sepolia', '50', '0.05 USDC'],
    ])
    expect(networks(await render({ stats: { ...STATS, networks: {} } }))).toEqual([
      [BASE, 'Base', '0', '0 USDC'],
      [SOLANA, 'Solana', '0', '0 USDC'],
    ])
  })

  it('lists the 7 days of the chart as a table', async () => {
    const page = await render()
    const rows = [
      ...page.matchAll(
        /<tr><th scope="row"><time datetime="([^"]+)">[^<]*<\/time><\/th><td class="num">([^<]*)<\/td><td class="num">([^<]*)<\/td><\/tr>/g,
      ),
    ]
    expect(rows.map((r) => [r[1], r[2], r[3]])).toEqual([
      ['2025-06-09', '0', '0'],
      ['2025-06-10', '1', '0.001'],
      ['2025-06-11', '0', '0'],
      ['2025-06-12', '0', '0'],
      ['2025-06-13', '1,000', '1'],
      ['2025-06-14', '0', '0'],
      ['2025-06-15', '6', '0.006'],
    ])
  })

  it('renders the unavailable state, never zeros, when there are no figures', async () => {
    const page = await render({ stats: undefined })
    expect(page).toContain('data-state="unavailable"')
    const values = [...page.matchAll(/data-(?:stat|field)="[^"]*"[^>]*>(.*?)<\/dd>/g)].map(
      (r) => r[1],
    )
    expect(values).toHaveLength(11 + 2 * 2)
    expect(new Set(values)).toEqual(new Set(['Unavailable']))
    expect(page).toContain(
      '<p class="notice" role="status" data-role="notice">Live figures are unavailable: the telemetry store is not answering.',
    )
    expect(page).toContain('<span class="pill" data-role="state">Unavailable</span>')
    expect(page).toContain(
      '<tbody data-role="daily"><tr><td colspan="3">Unavailable</td></tr></tbody>',
    )
    // The configured rails are still named.
    expect(networks(page).map((row) => row.slice(0, 2))).toEqual([
      [BASE, 'Base'],
      [SOLANA, 'Solana'],
    ])
  })

  it('generates one catalogue row per tool, in catalogue order, with its USDC price', async () => {
    const page = await render()
    const rows = [
      ...page.matchAll(
        /<tr role="row" data-tool="([^"]+)"><th scope="row" role="rowheader">(.*?)<\/th><td role="cell" class="what">(.*?)<\/td><td role="cell" class="endpoints">(.*?)<\/td><td role="cell" class="num price">(.*?)<\/td><\/tr>/g,
      ),
    ].map((r) => [r[1], r[2], r[3], r[4], r[5]].map((s) => text(s ?? '')))
    expect(rows).toEqual(
      catalog.map((tool) => [
        tool.id,
        tool.title,
        tool.description,
        `HTTP POST ${tool.path} MCP ${tool.mcpName}`,
        // SPEC 4.1: 0.003 USDC for pipeline and payload-inspect, 0.001 USDC for the others.
        ['pipeline', 'payload-inspect'].includes(tool.id) ? '0.003' : '0.001',
      ]),
    )
    expect(page).toContain(`<caption>The 8 tools and their price per call</caption>`)
    expect(text(page)).toContain('0.001 to 0.003 USDC per call')
  })

  it('carries the quick start, with the public base URL, and the discovery links', async () => {
    const page = await render()
    expect(page).toContain('curl -i -X POST https://tools.example/hash \\')
    expect(page).toContain('wrapFetchWithPayment(fetch, client)')
    expect(page).toContain('https://tools.example/mcp')
    expect(page).toContain('<li id="quick-start-bridge">')
    // Not on npm yet (npm view payload-tools-mcp: 404): the snippet runs the bin of a clone.
    expect(page).toContain('&quot;command&quot;: &quot;node&quot;')
    expect(page).toContain('&quot;/path/to/payload-tools/clients/mcp-bridge/dist/bin.js&quot;')
    expect(page).toContain(
      'It is not on npm yet: in a clone of the repository, <code>npm install</code> builds it',
    )
    expect(page).toContain(
      'After publication: <code>&quot;command&quot;: &quot;npx&quot;, &quot;args&quot;: [&quot;-y&quot;, &quot;payload-tools-mcp&quot;]</code>.',
    )
    expect(page).toContain('<li id="quick-start-receipt">')
    expect(page).toContain(
      'createRemoteJWKSet(new URL(&#39;https://tools.example/.well-known/jwks.json&#39;))',
    )
    expect(page).toContain('<a href="/.well-known/jwks.json">')
    expect(page).toContain('&quot;PAYLOAD_TOOLS_URL&quot;: &quot;https://tools.example&quot;')
    for (const href of ['/openapi.json', '/llms.txt', '/.well-known/x402', '/mcp']) {
      expect(page).toContain(`<a href="${href}">`)
    }
  })

  it('escapes everything it interpolates', async () => {
    const evil = '<script>alert("x")</script>'
    const tool: ToolDefinition = {
      id: 'evil"id',
      path: `/x"><img src=x onerror=alert(1)>`,
      mcpName: "evil'name",
      operationId: 'evil',
      price: '1000',
      title: evil,
      description: 'A & B <b>bold</b>',
      input: z.object({ note: z.string() }),
      output: z.object({}),
      examples: [{ note: `</code>${evil}` }],
      limits: [],
      check: () => {},
      run: () => ({}),
    }
    const page = await render({
      tools: [tool],
      publicBaseUrl: 'https://h.example/"><svg onload=alert(1)>',
      stats: { ...STATS, networks: { '<i>net</i>': { calls: 1, revenue: m('1', '0.000001') } } },
    })
    expect(page).not.toContain('<script>alert')
    expect(page).not.toContain('<img src=x')
    expect(page).not.toContain('<svg onload')
    expect(page).not.toContain('<b>bold')
    expect(page).not.toContain('<i>net')
    expect(page).toContain('&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;')
    expect(page).toContain('data-tool="evil&quot;id"')
    expect(page).toContain('<code>evil&#39;name</code>')
    expect(page).toContain('A &amp; B &lt;b&gt;bold&lt;/b&gt;')
    expect(page).toContain('data-network="&lt;i&gt;net&lt;/i&gt;"')
  })

  it('marks a testnet plainly: title, header label and a banner naming the test networks', async () => {
    const testnet = [
      { id: 'evm', network: 'eip155:84532', name: 'Base Sepolia', testnet: true },
      {
        id: 'solana',
        network: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
        name: 'Solana devnet',
        testnet: true,
      },
    ] as const
    const page = await render({ rails: testnet })
    expect(page).toContain(
      '<title>Testnet · Payload Tools: payload utilities paid per call with x402</title>',
    )
    expect(page).toContain(
      '<div class="stage-banner" role="note" aria-label="Test network" data-stage="testnet">',
    )
    expect(text(page)).toContain(
      'Testnet Payments here settle on Base Sepolia and Solana devnet: faucet USDC with no value, no real money. Figures and receipts are from the test networks.',
    )
    expect(page).toContain('<span>Payload Tools</span> <span class="stage-label">Testnet</span>')
    expect(page).toContain(
      '<p class="eyebrow">x402 v2 · USDC on Base Sepolia and Solana devnet</p>',
    )
    expect(text(page)).toContain(
      'Your x402 client signs a USDC payment on Base Sepolia or Solana devnet (test networks: faucet USDC, no value).',
    )
    expect(page).toContain('client.register(&#39;eip155:84532&#39;')
    expect(page.indexOf('stage-banner')).toBeLessThan(page.indexOf('<header'))
  })

  it('marks a local devnet plainly, before anything else: title, header label and a banner saying no real money moves', async () => {
    const local = RAILS.map((rail) => ({ ...rail, devnet: true as const }))
    const page = await render({ rails: local })
    expect(page).toContain(
      '<title>Devnet · Payload Tools: payload utilities paid per call with x402</title>',
    )
    expect(page).toContain(
      '<div class="stage-banner" role="note" aria-label="Local devnet" data-stage="devnet">',
    )
    expect(text(page)).toContain(
      "Devnet This is a demo: Base and Solana are simulated on a local devnet, for trying the service: its USDC has no value, no real money moves. Figures and receipts come from this machine's chains.",
    )
    expect(page).toContain('<span>Payload Tools</span> <span class="stage-label">Devnet</span>')
    expect(page.indexOf('stage-banner')).toBeLessThan(page.indexOf('<header'))
  })

  it('shows no testnet mark on mainnet', async () => {
    const page = await render()
    expect(page).not.toContain('stage-banner')
    expect(page).not.toContain('stage-label')
    expect(page).not.toContain('Testnet')
    expect(page).toContain('<p class="eyebrow">x402 v2 · USDC on Base and Solana</p>')
    expect(page).toContain('client.register(&#39;eip155:8453&#39;')
  })

  it('has no inline script or style, so it runs under the strict CSP', async () => {
    const testnet = [
      { id: 'evm', network: 'eip155:84532', name: 'Base Sepolia', testnet: true },
    ] as const
    for (const [stats, rails] of [
      [STATS, RAILS],
      [undefined, RAILS],
      [STATS, testnet],
    ] as const) {
      const page = await render({ stats, rails })
      const scripts = [...page.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
      expect(scripts.map((s) => [s[1], s[2]])).toEqual([
        [' src="/assets/uplot.min.js" defer', ''],
        [' src="/assets/landing.js" defer', ''],
      ])
      expect(page).not.toMatch(/<style\b/i)
      expect(page).not.toMatch(/\sstyle=/i)
      expect(page).not.toMatch(/\son[a-z]+=/i)
      expect(page).not.toMatch(/(?:src|href)="(?:https?:)?\/\//)
    }
  })
})
