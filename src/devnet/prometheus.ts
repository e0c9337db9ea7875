import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { type Child, spawnChild, waitFor } from './child.js'
import { freePort } from './ports.js'

/** Debian's Prometheus server (package `prometheus`; `.ci/run` installs it when missing). */
export const PROMETHEUS_BINARY = '/usr/bin/prometheus'

/** The shipped alerting rules, loaded so that the UI shows them (deploy/prometheus/alerts.yml). */
export const ALERT_RULES_PATH = fileURLToPath(
  new URL('../../deploy/prometheus/alerts.yml', import.meta.url),
)

/** Seconds between scrapes (and rule evaluations) of the dev Prometheus. */
export const DEV_SCRAPE_INTERVAL_SECONDS = 5

/** Options of {@link startPrometheus}. */
export interface StartPrometheusOptions {
  /** `host:port` of every instance, scraped at `/metrics` as job `payload-tools`. */
  targets: readonly string[]
  /** The instances' METRICS_TOKEN, sent as `Authorization: Bearer`. */
  token: string
  /** Port of Prometheus's UI and API on 127.0.0.1; a free one by default. */
  port?: number
  /** Directory for its config, token file, data and log; a fresh temp directory by default. */
  dir?: string
}

/** A Prometheus server of our own. */
export interface Prometheus {
  /** UI and HTTP API, e.g. `http://127.0.0.1:40125`. */
  url: string
  dir: string
  /** Its stdout and stderr. */
  logFile: string
  /** SIGTERM (it flushes its head block), SIGKILL after 10 s; removes a directory it created. */
  stop(): Promise<void>
}

/**
 * The scrape configuration for `targets`: one job, `payload-tools` (the name the shipped alerts
 * expect), with the bearer token read from `tokenFile` and the shipped rules. JSON, which
 * Prometheus reads as YAML.
 *
 * @example prometheusConfig({ targets: ['127.0.0.1:8401'], tokenFile: '/tmp/p/token', rulesFile: ALERT_RULES_PATH })
 */
export function prometheusConfig(options: {
  targets: readonly string[]
  tokenFile: string
  rulesFile: string
}): string {
  const interval = `${DEV_SCRAPE_INTERVAL_SECONDS}s`
  return JSON.stringify(
    {
      global: { scrape_interval: interval, evaluation_interval: interval },
      rule_files: [options.rulesFile],
      scrape_configs: [
        {
          job_name: 'payload-tools',
          metrics_path: '/metrics',
          authorization: { type: 'Bearer', credentials_file: options.tokenFile },
          static_configs: [{ targets: [...options.targets] }],
        },
      ],
    },
    null,
    2,
  )
}

/**
 * Starts Debian's Prometheus scraping the given instances (dev only: `npm run cluster`), with its
 * data in a temp directory, and resolves once its API answers ready.
 *
 * @example
 * const prometheus = await startPrometheus({ targets: ['127.0.0.1:8401'], token })
 * console.log(`${prometheus.url}/targets`)
 * await prometheus.stop()
 * @throws Error when the binary is missing or the server does not become ready (it is stopped)
 */
export async function startPrometheus(options: StartPrometheusOptions): Promise<Prometheus> {
  if (!existsSync(PROMETHEUS_BINARY)) {
    throw new Error(
      `${PROMETHEUS_BINARY} is missing: apt-get install --no-install-recommends prometheus (.ci/run does it)`,
    )
  }
  const ownsDir = options.dir === undefined
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'payload-prometheus-'))
  mkdirSync(join(dir, 'data'), { recursive: true })
  const tokenFile = join(dir, 'token')
  writeFileSync(tokenFile, options.token, { mode: 0o600 })
  const configFile = join(dir, 'prometheus.yml')
  writeFileSync(
    configFile,
    prometheusConfig({ targets: options.targets, tokenFile, rulesFile: ALERT_RULES_PATH }),
  )
  const port = options.port ?? (await freePort())
  const url = `http://127.0.0.1:${port}`
  const logFile = join(dir, 'prometheus.log')
  const child: Child = spawnChild(
    PROMETHEUS_BINARY,
    [
      `--config.file=${configFile}`,
      `--storage.tsdb.path=${join(dir, 'data')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--storage.tsdb.retention.time=1d',
    ],
    { env: { PATH: process.env.PATH }, logFile },
  )
  const stop = async () => {
    await child.stop({ signal: 'SIGTERM', graceMs: 10_000 })
    if (ownsDir) rmSync(dir, { recursive: true, force: true })
  }
  try {
    await waitFor(
      'prometheus',
      async () => (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) })).ok,
      { timeoutMs: 30_000, intervalMs: 200, alive: child.running },
    )
  } catch (error) {
    const tail = child.logTail(2_000)
    await stop()
    throw new Error(`${(error as Error).message}\n${tail}`)
  }
  return { url, dir, logFile, stop }
}
