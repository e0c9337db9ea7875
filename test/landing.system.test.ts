import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { type BrowserContext, chromium, type Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevStack, startDevStack } from '../src/devnet/stack.js'
import { createTelemetry, type Telemetry } from '../src/telemetry/index.js'
import { findToolByPath } from '../src/tools/catalog.js'
import type { ToolDefinition } from '../src/tools/types.js'
import { paidFetch } from './helpers/clients.js'
import { json } from './helpers/json.js'
import { payerKeys, type Rail } from './helpers/rails.js'
import { type RunningService, startService } from './helpers/service.js'

// The landing page in a real browser: Debian chromium driven by playwright-core, against the real
// service on the devnet with SQLite telemetry. The page must show what /stats says, follow a paid
// call, show "unavailable" (never zeros) while the telemetry store is locked, and recover, with no
// console error, no CSP violation and no request leaving the origin. Screenshots go to
// test-artifacts/.

const CHROMIUM = '/usr/bin/chromium'
const ARTIFACTS = join(process.cwd(), 'test-artifacts')
/** The page refreshes every 5 s and /stats caches for 2 s: an update shows within about 7 s. */
const UPDATE_TIMEOUT_MS = 15_000

let stack: DevStack
let telemetry: Telemetry
let svc: RunningService
let context: BrowserContext
let page: Page
const dataDir = mkdtempSync(join(tmpdir(), 'landing-browser-'))
const profileDir = mkdtempSync(join(tmpdir(), 'landing-chromium-'))
const requests: string[] = []
const consoleErrors: string[] = []

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) {
    throw new Error(
      `Chromium is missing at ${CHROMIUM}: install Debian's chromium (npm test runs ` +
        'scripts/system-packages.sh, which installs it as root). The landing page browser test ' +
        'cannot be skipped.',
    )
  }
  stack = await startDevStack({ payers: 1 })
  telemetry = await createTelemetry({ dataDir, salt: 'landing-browser-salt' })
  svc = await startService(stack, {}, { telemetry })
  context = await chromium.launchPersistentContext(profileDir, {
    executablePath: CHROMIUM,
    headless: true,
    // Without the background-networking flags chromium calls home, and on a closed network
    // floods it with refused connections.
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1280, height: 900 },
    colorScheme: 'light',
  })
  context.on('request', (request) => requests.push(request.url()))
  // A CSP violation raises `securitypolicyviolation`; init scripts run outside the page's CSP.
  await context.addInitScript(() => {
    const w = globalThis as unknown as BrowserGlobals
    w.cspViolations = []
    w.document.addEventListener('securitypolicyviolation', (event) => {
      w.cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`)
    })
  })
  page = context.pages()[0] ?? (await context.newPage())
  page.on('console', (message) => {
    if (message.type() === 'error') consoleErrors.push(message.text())
  })
  page.on('pageerror', (error) => consoleErrors.push(`pageerror: ${error.message}`))
  mkdirSync(ARTIFACTS, { recursive: true })
}, 120_000)

afterAll(async () => {
  await context?.close()
  await svc?.stop()
  await telemetry?.close()
  await stack?.stop()
  rmSync(dataDir, { recursive: true, force: true })
  rmSync(profileDir, { recursive: true, force: true })
})

/**
 * The few browser globals the page functions below use. They run in chromium, but are type-checked
 * here without the DOM library (adding it would change the Node globals of the whole project).
 */
interface PageNode {
  textContent: string | null
  dataset: Record<string, string | undefined>
  children: ArrayLike<PageNode>
  querySelector(selector: string): PageNode | null
  querySelectorAll(selector: string): ArrayLike<PageNode>
}
interface BrowserGlobals {
  document: PageNode & {
    getElementById(id: string): PageNode | null
    documentElement: { scrollWidth: number; clientWidth: number }
    addEventListener(
      type: 'securitypolicyviolation',
      listener: (event: { violatedDirective: string; blockedURI: string }) => void,
    ): void
  }
  cspViolations: string[]
}

const tool = (path: string) => findToolByPath(path) as ToolDefinition

async function paidCall(rail: Rail, path: string): Promise<void> {
  const pay = await paidFetch(payerKeys(stack, rail), rail)
  const res = await pay(`${svc.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(tool(path).examples[0]),
  })
  expect(res.status).toBe(200)
}

// biome-ignore lint/suspicious/noExplicitAny: /stats JSON, compared field by field below
type StatsBody = Record<string, any>

async function stats(): Promise<StatsBody> {
  const res = await fetch(`${svc.baseUrl}/stats`)
  expect(res.status).toBe(200)
  return json(res)
}

/** What the page must show for a /stats body, formatted independently of the page's code. */
function expectedFigures(body: StatsBody) {
  const count = (n: number) => n.toLocaleString('en-US')
  const usdc = (m: { usdc: string }) => `${m.usdc} USDC`
  const network = (id: string) => body.networks[id] ?? { calls: 0, revenue: { usdc: '0' } }
  return {
    figures: {
      paid_calls: count(body.paid_calls),
      successful_paid_calls: count(body.successful_paid_calls),
      'channels.calls': count(body.channels.calls),
      unique_payers: count(body.unique_payers),
      repeat_payers: count(body.repeat_payers),
      repeat_paid_calls: count(body.repeat_paid_calls),
      repeat_call_rate: `${(body.repeat_call_rate * 100).toFixed(1)}%`,
      'revenue.lifetime': usdc(body.revenue.lifetime),
      'revenue.last_24h': usdc(body.revenue.last_24h),
      'revenue.last_7d': usdc(body.revenue.last_7d),
      'channels.revenue': usdc(body.channels.revenue),
    },
    networks: ['eip155:8453', stack.solana.network].map((id) => [
      id,
      count(network(id).calls),
      usdc(network(id).revenue),
    ]),
    daily: body.daily.map((d: StatsBody) => [d.date, count(d.calls), d.revenue.usdc]),
  }
}

/** What the page shows right now, read from the DOM. */
function shownFigures() {
  return page.evaluate(() => {
    const { document } = globalThis as unknown as BrowserGlobals
    const text = (el: PageNode | null) => el?.textContent?.trim() ?? ''
    const figures: Record<string, string> = {}
    for (const el of Array.from(document.querySelectorAll('[data-stat]'))) {
      figures[el.dataset.stat ?? ''] = text(el)
    }
    const networks = Array.from(document.querySelectorAll('[data-network]')).map((card) => [
      card.dataset.network,
      text(card.querySelector('[data-field="calls"]')),
      text(card.querySelector('[data-field="revenue"]')),
    ])
    const daily = Array.from(document.querySelectorAll('[data-role="daily"] tr')).map((row) =>
      Array.from(row.children).map((cell) => text(cell)),
    )
    return { figures, networks, daily }
  })
}

/** Waits until the page shows what /stats says, with `paid_calls` equal to `paidCalls`. */
async function expectPageToMatchStats(paidCalls: number): Promise<void> {
  await page.waitForFunction(
    (n) => {
      const { document } = globalThis as unknown as BrowserGlobals
      return (
        document.getElementById('live')?.dataset.state === 'available' &&
        document.querySelector('[data-stat="paid_calls"]')?.textContent === String(n)
      )
    },
    paidCalls,
    { timeout: UPDATE_TIMEOUT_MS },
  )
  const body = await stats()
  expect(body.paid_calls).toBe(paidCalls)
  expect(await shownFigures()).toEqual(expectedFigures(body))
}

/** The chart's legend, [label, value] per series, as uPlot drew it. */
function legend(): Promise<string[][]> {
  return page.evaluate(() => {
    const { document } = globalThis as unknown as BrowserGlobals
    return Array.from(document.querySelectorAll('.u-legend .u-series')).map((row) => [
      row.querySelector('.u-label')?.textContent ?? '',
      row.querySelector('.u-value')?.textContent ?? '',
    ])
  })
}

/** The legend for one day of /stats `daily`, formatted independently of the page's code. */
function legendOf(day: StatsBody): string[][] {
  const date = new Date(`${day.date}T00:00:00Z`)
  const weekday = date.toLocaleDateString('en-US', { weekday: 'short', timeZone: 'UTC' })
  return [
    ['Day', `${weekday} ${date.getUTCDate()}`],
    ['Calls', day.calls.toLocaleString('en-US')],
    ['Revenue (USDC)', String(Number(day.revenue.usdc))],
  ]
}

/** Waits until the legend shows `expected` (it follows each refresh of /stats). */
async function expectLegend(expected: string[][]): Promise<void> {
  await expect.poll(legend, { timeout: UPDATE_TIMEOUT_MS, interval: 250 }).toEqual(expected)
}

async function screenshot(name: string, width: number, scheme: 'light' | 'dark') {
  await page.setViewportSize({ width, height: width < 600 ? 844 : 900 })
  await page.emulateMedia({ colorScheme: scheme })
  // The chart redraws for the new colour scheme and width.
  await page.waitForTimeout(300)
  if (width < 600) {
    const overflow = await page.evaluate(() => {
      const { documentElement } = (globalThis as unknown as BrowserGlobals).document
      return documentElement.scrollWidth - documentElement.clientWidth
    })
    expect(overflow, 'no horizontal scrolling on a phone').toBe(0)
  }
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true })
}

describe('landing page in chromium', () => {
  it('shows the /stats figures, follows paid calls and telemetry outages', async () => {
    await paidCall('evm', '/hash')
    await paidCall('solana', '/pipeline')

    await page.goto(`${svc.baseUrl}/`)
    // The devnet says it is one: title, header label and a banner naming its simulated rails.
    expect(await page.title()).toBe(
      'Devnet · Payload Tools: payload utilities paid per call with x402',
    )
    const devnet = page.locator('[data-stage="devnet"]')
    expect(await devnet.isVisible()).toBe(true)
    expect((await devnet.textContent())?.trim()).toBe(
      'Devnet This is a demo: Base and Solana are simulated on a local devnet, for trying the ' +
        'service: its USDC has no value, no real money moves. Figures and receipts come from ' +
        "this machine's chains.",
    )
    // uPlot drew the 7-day chart from this origin.
    await page.waitForSelector('[data-role="chart"] canvas')
    await expectPageToMatchStats(2)

    // The legend shows the latest day (today) without the pointer on the chart, the day under
    // the pointer while it hovers, and the latest day again when it leaves.
    const twoCalls = await stats()
    const today = twoCalls.daily.at(-1)
    expect(today).toMatchObject({ calls: 2, revenue: { usdc: '0.004' } })
    await expectLegend(legendOf(today))
    // The leftmost point of the plot is nearest the first of the 7 days.
    await page.locator('[data-role="chart"] .u-over').hover({ position: { x: 2, y: 20 } })
    await expectLegend(legendOf(twoCalls.daily[0]))
    await page.mouse.move(0, 0)
    await expectLegend(legendOf(today))

    // A paid call shows up at the next refresh, in the legend too.
    await paidCall('evm', '/base64')
    await expectPageToMatchStats(3)
    await expectLegend(legendOf({ ...today, calls: 3, revenue: { usdc: '0.005' } }))
    expect(await page.locator('[data-role="notice"]').isVisible()).toBe(false)
    // Let the 1.2 s highlight of the changed figures fade before the screenshots.
    await page.waitForTimeout(1_500)

    await screenshot('landing-desktop-light', 1280, 'light')
    await screenshot('landing-desktop-dark', 1280, 'dark')
    await screenshot('landing-phone-light', 390, 'light')
    await screenshot('landing-phone-dark', 390, 'dark')
    await page.setViewportSize({ width: 1280, height: 900 })
    await page.emulateMedia({ colorScheme: 'light' })

    expect(consoleErrors).toEqual([])

    // The store goes down: another connection holds SQLite's write lock. A paid call still
    // succeeds (its events wait in memory), /stats answers 503, and the page says so.
    const locker = new Database(join(dataDir, 'telemetry.sqlite'), { timeout: 5_000 })
    try {
      locker.exec('BEGIN EXCLUSIVE')
      await paidCall('solana', '/hash')
      expect((await fetch(`${svc.baseUrl}/stats`)).status).toBe(503)
      await page.waitForFunction(
        () =>
          (globalThis as unknown as BrowserGlobals).document.getElementById('live')?.dataset
            .state === 'unavailable',
        null,
        {
          timeout: UPDATE_TIMEOUT_MS,
        },
      )
      const shown = await shownFigures()
      expect(Object.values(shown.figures)).toEqual(Array(11).fill('Unavailable'))
      expect(shown.networks.map((n) => n.slice(1))).toEqual([
        ['Unavailable', 'Unavailable'],
        ['Unavailable', 'Unavailable'],
      ])
      expect(shown.daily).toEqual([['Unavailable']])
      const notice = page.locator('[data-role="notice"]')
      expect(await notice.isVisible()).toBe(true)
      expect(await notice.textContent()).toBe(
        'Live figures are unavailable: the telemetry store is not answering. Paid calls are not affected; this page keeps retrying.',
      )
      expect(await page.locator('[data-role="state"]').textContent()).toBe('Unavailable')
      await page.screenshot({ path: join(ARTIFACTS, 'landing-unavailable.png'), fullPage: true })
    } finally {
      locker.exec('COMMIT')
      locker.close()
    }

    // Back up: the buffered events are flushed and the page shows all four calls again.
    await expectPageToMatchStats(4)

    // Chromium reports each 503 of /stats itself; nothing else may have gone wrong.
    expect(consoleErrors.filter((e) => !/status of 503 \(Service Unavailable\)/.test(e))).toEqual(
      [],
    )
    expect(
      await page.evaluate(() => (globalThis as unknown as BrowserGlobals).cspViolations),
    ).toEqual([])
    const origin = new URL(svc.baseUrl).origin
    expect(requests.length).toBeGreaterThan(0)
    expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([])
  }, 120_000)

  it('marks a testnet plainly: a visible banner and header label, same CSP', async () => {
    // The page is rendered from the configured rails; it needs no test chain to show them.
    const testnet = await startService(
      stack,
      {
        X402_NETWORK: 'testnet',
        SOLANA_NETWORK: 'solana:EtWTRABZaYq6iMfeYKouRu166VU2xqa1',
        // A real testnet deployment: no devnet marker, so the testnet banner is the one shown.
        X402_DEVNET: 'off',
      },
      { telemetry },
    )
    try {
      requests.length = 0
      consoleErrors.length = 0
      await page.goto(`${testnet.baseUrl}/`)
      expect(await page.title()).toBe(
        'Testnet · Payload Tools: payload utilities paid per call with x402',
      )
      const banner = page.locator('[data-stage="testnet"]')
      expect(await banner.isVisible()).toBe(true)
      expect((await banner.textContent())?.trim()).toBe(
        'Testnet Payments here settle on Base Sepolia and Solana devnet: faucet USDC with no ' +
          'value, no real money. Figures and receipts are from the test networks.',
      )
      expect(await page.locator('.brand .stage-label').isVisible()).toBe(true)
      expect(
        await page
          .locator('[data-network] h4')
          .evaluateAll((cards) => cards.map((card) => card.textContent)),
        // The shared store also holds the mainnet calls above: listed after, by identifier.
      ).toEqual(['Base Sepolia', 'Solana devnet', 'Base', 'Solana'])
      await screenshot('landing-testnet-desktop-light', 1280, 'light')
      await screenshot('landing-testnet-phone-dark', 390, 'dark')
      await page.setViewportSize({ width: 1280, height: 900 })
      await page.emulateMedia({ colorScheme: 'light' })
      expect(consoleErrors).toEqual([])
      expect(
        await page.evaluate(() => (globalThis as unknown as BrowserGlobals).cspViolations),
      ).toEqual([])
      const origin = new URL(testnet.baseUrl).origin
      expect(requests.filter((url) => new URL(url).origin !== origin)).toEqual([])
    } finally {
      await testnet.stop()
    }
  }, 60_000)
})
