import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { parse, stringify } from 'yaml'
import { loadConfig } from '../src/config.js'
import { SYSTEM_REDIS_URL } from '../src/devnet/redis.js'
import { createService, type Service } from '../src/service.js'
import { createTelemetry, type Telemetry } from '../src/telemetry/index.js'
import { exportedNames } from './helpers/metrics.js'

// The shipped dashboard and alerting rules against what the service really exports: every metric
// a panel or a rule queries must be in a scrape of a real service (with Redis and telemetry, so
// that every metric family exists), and the rules must pass `promtool check rules` and their own
// unit tests (`promtool test rules`, Debian's `prometheus` package; .ci/run installs it).

const DASHBOARD = 'deploy/grafana/payload-tools.json'
const RULES = 'deploy/prometheus/alerts.yml'
const RULE_TESTS = 'deploy/prometheus/alerts.test.yml'
const PROMTOOL = '/usr/bin/promtool'
const TOKEN = 'observability-test-token-0123456789'
/** Series Prometheus makes itself for every target, not the service. */
const PROMETHEUS_SERIES = new Set(['up'])

/** PromQL words that are not metric names: operators, modifiers, aggregation keywords. */
const KEYWORDS = new Set([
  'and',
  'or',
  'unless',
  'bool',
  'offset',
  'by',
  'without',
  'on',
  'ignoring',
  'group_left',
  'group_right',
])

/**
 * The metric names a PromQL expression reads. Strings, label matchers, ranges, grouping label
 * lists, numbers and Grafana variables are removed first; what remains that is not a function
 * (a name followed by `(`) or a keyword is a metric name.
 *
 * @example metricNames('sum by (le) (rate(a_bucket{x="1"}[5m])) / 1e6') // ['a_bucket']
 */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\$\{?\w+\}?/g, ' ')
    .replace(/(?<![\w:])\d+(?:\.\d+)?(?:e[+-]?\d+)?/gi, ' ')
  const names: string[] = []
  for (const match of bare.matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    const after = bare.slice((match.index ?? 0) + match[0].length)
    if (/^\s*\(/.test(after) || KEYWORDS.has(match[0])) continue
    names.push(match[0])
  }
  return names
}

interface Panel {
  title?: string
  type: string
  targets?: { expr: string }[]
  panels?: Panel[]
}

const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as { panels: Panel[] }
const panelQueries = dashboard.panels
  .flatMap((p) => [p, ...(p.panels ?? [])])
  .flatMap((p) => (p.targets ?? []).map((t) => ({ where: `panel "${p.title}"`, expr: t.expr })))
const rules = parse(readFileSync(RULES, 'utf8')) as {
  groups: { rules: { alert: string; expr: string }[] }[]
}
const ruleQueries = rules.groups
  .flatMap((g) => g.rules)
  .map((r) => ({ where: `alert ${r.alert}`, expr: r.expr }))

let telemetry: Telemetry
let service: Service
let dataDir: string
let exported: Set<string>

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'observability-'))
  telemetry = await createTelemetry({ dataDir, salt: 'observability-salt-0123' })
  service = createService(
    loadConfig({
      METRICS_TOKEN: TOKEN,
      REDIS_URL: SYSTEM_REDIS_URL,
      PAY_TO_EVM: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
      // A facilitator (never reached here) and a Base rail: the prepaid channels and their gauges.
      FACILITATOR_URL: 'http://127.0.0.1:9',
      TOOL_WORKERS: '1',
    }),
    { telemetry, dataDir },
  )
  const res = await service.app.request('/metrics', {
    headers: { Authorization: `Bearer ${TOKEN}` },
  })
  expect(res.status).toBe(200)
  exported = exportedNames(await res.text())
})
afterAll(async () => {
  await service?.close()
  await telemetry?.close()
  rmSync(dataDir, { recursive: true, force: true })
})

describe('metricNames', () => {
  it('finds the metrics of an expression, and nothing else', () => {
    expect(
      metricNames(
        'histogram_quantile(0.95, sum by (le, op) (rate(a_seconds_bucket{op=~"v|s"}[$__rate_interval]))) / 1e6',
      ),
    ).toEqual(['a_seconds_bucket'])
    expect(
      metricNames('sum(increase(b_total[2h])) > 100 and on () sum(c_total{x="and"}) == 0'),
    ).toEqual(['b_total', 'c_total'])
    expect(metricNames('max by (instance) (lag_seconds) * on(instance) group_left up')).toEqual([
      'lag_seconds',
      'up',
    ])
  })
})

describe('the Grafana dashboard (deploy/grafana/payload-tools.json)', () => {
  it('queries only metrics the service exports', () => {
    expect(panelQueries.length).toBeGreaterThan(20)
    const unknown = panelQueries.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !exported.has(name) && !PROMETHEUS_SERIES.has(name))
        .map((name) => `${where}: ${name}`),
    )
    expect(unknown).toEqual([])
  })

  it('queries in valid PromQL (each query checked by promtool as a recording rule)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dashboard-rules-'))
    try {
      const file = join(dir, 'dashboard.rules.yml')
      const rules = panelQueries.map(({ expr }, i) => ({
        record: `dashboard:query_${i}`,
        // Grafana's own variable, as Grafana substitutes it.
        expr: expr.replaceAll('$__rate_interval', '1m'),
      }))
      writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules }] }))
      const out = execFileSync(PROMTOOL, ['check', 'rules', file], { encoding: 'utf8' })
      expect(out).toContain(`SUCCESS: ${rules.length} rules found`)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('shows paid calls and revenue by network, outcomes, latencies, saturation, 402/429 and lag', () => {
    const used = new Set(panelQueries.flatMap(({ expr }) => metricNames(expr)))
    for (const name of [
      'x402_payments_total',
      'x402_settled_atomic_total',
      'x402_facilitator_request_duration_seconds_bucket',
      'tool_run_duration_seconds_bucket',
      'tool_pool_busy_workers',
      'tool_pool_workers',
      'tool_pool_queue_depth',
      'tool_pool_rejections_total',
      'http_request_duration_seconds_count',
      'rate_limited_total',
      'nodejs_eventloop_lag_p99_seconds',
      'redis_command_duration_seconds_bucket',
      'telemetry_write_duration_seconds_bucket',
    ]) {
      expect(used.has(name), name).toBe(true)
    }
  })
})

describe('the alerting rules (deploy/prometheus/alerts.yml)', () => {
  it('query only metrics the service exports', () => {
    const unknown = ruleQueries.flatMap(({ where, expr }) =>
      metricNames(expr)
        .filter((name) => !exported.has(name) && !PROMETHEUS_SERIES.has(name))
        .map((name) => `${where}: ${name}`),
    )
    expect(unknown).toEqual([])
    expect(ruleQueries.map((r) => r.where)).toEqual(
      expect.arrayContaining([
        'alert PayloadToolsFacilitatorErrors',
        'alert PayloadToolsFacilitatorSlow',
        'alert PayloadToolsSettleFailures',
        'alert PayloadToolsPoolRejections',
        'alert PayloadToolsRedisDown',
        'alert PayloadToolsTelemetryDown',
        'alert PayloadToolsNoSettledPayments',
      ]),
    )
  })

  it('pass promtool check rules', () => {
    const out = execFileSync(PROMTOOL, ['check', 'rules', RULES], { encoding: 'utf8' })
    expect(out).toContain(`SUCCESS: ${ruleQueries.length} rules found`)
  })

  it('pass their unit tests (promtool test rules)', () => {
    const out = execFileSync(PROMTOOL, ['test', 'rules', RULE_TESTS], { encoding: 'utf8' })
    expect(out).toContain('SUCCESS')
  })
})
