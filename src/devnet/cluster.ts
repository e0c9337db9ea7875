import { randomBytes } from 'node:crypto'
import { chmodSync, mkdirSync, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { waitFor } from './child.js'
import { createServiceInstance, type ServiceInstance } from './instance.js'
import { type Nginx, startNginx } from './nginx.js'
import { freePort } from './ports.js'
import { type Prometheus, startPrometheus } from './prometheus.js'
import type { DevStack } from './stack.js'

/**
 * What every instance of one service must share (docs/deploy.md): the facilitator and payTo
 * addresses of the dev stack, the telemetry database, Redis and the payer-key salt.
 *
 * @example
 * sharedEnv(stack, { databaseUrl: db.url, redisUrl: 'redis://127.0.0.1:6379', salt })
 * // { FACILITATOR_URL, PAY_TO_EVM, PAY_TO_SOLANA, SOLANA_NETWORK, DATABASE_URL, REDIS_URL, TELEMETRY_SALT }
 */
export function sharedEnv(
  stack: DevStack,
  shared: { databaseUrl: string; redisUrl: string; salt: string },
): Record<string, string> {
  return {
    ...stack.serviceEnv,
    DATABASE_URL: shared.databaseUrl,
    // The duplicate-settlement guard and idempotent replays, shared by every instance.
    REDIS_URL: shared.redisUrl,
    TELEMETRY_SALT: shared.salt,
  }
}

/** Options of {@link startCluster}. */
export interface ClusterOptions {
  /** How many instances (at least 1). */
  instances: number
  /**
   * Configuration every instance shares, e.g. from {@link sharedEnv}. PUBLIC_BASE_URL is set to
   * the front, PORT and HOST per instance; TRUST_PROXY_HOPS is 1 and RATE_LIMIT_POINTS 1,000,000
   * unless given.
   */
  env: Record<string, string>
  /** Front (nginx) port; a free one by default. */
  frontPort?: number
  /** Directory for logs and nginx's files; a fresh temp directory by default. */
  dir?: string
  /** LOG_LEVEL of the instances; default `info` (one line per request, into their log files). */
  logLevel?: string
  /**
   * Also start Debian's Prometheus scraping every instance's `/metrics` (with the env's
   * METRICS_TOKEN, or a random one given to every instance), its data in `<dir>/prometheus`.
   */
  prometheus?: boolean
}

/** N instances behind nginx on this machine. */
export interface Cluster {
  /** The front: nginx, e.g. `http://127.0.0.1:40123`. Every instance's PUBLIC_BASE_URL. */
  frontUrl: string
  instances: ServiceInstance[]
  nginx: Nginx
  /** The Prometheus scraping the instances, when asked for ({@link ClusterOptions.prometheus}). */
  prometheus?: Prometheus
  /** The instances' METRICS_TOKEN, with Prometheus. */
  metricsToken?: string
  /** Logs: `<dir>/<instance>.log`, `<dir>/nginx/logs/{error,access}.log`. */
  dir: string
  /** Stops nginx and every instance (SIGTERM, SIGKILL after 20 s). Idempotent. */
  stop(): Promise<void>
}

/**
 * Starts `instances` service processes on free ports, all with the same configuration, and
 * Debian's nginx in front of them on the shipped deploy/nginx.conf; resolves once every instance
 * answers /health with its facilitator reachable and the front answers /health. Dev and tests
 * only: the chains, facilitator, database and Redis are the caller's.
 *
 * @example
 * const cluster = await startCluster({ instances: 3, env: sharedEnv(stack, { databaseUrl, redisUrl, salt }) })
 * await fetch(`${cluster.frontUrl}/stats`)
 * cluster.instances[0].kill('SIGKILL')
 * await cluster.instances[0].start()
 * await cluster.stop()
 *
 * @throws Error when an instance or nginx does not start (everything started is stopped first)
 */
export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  if (!Number.isInteger(options.instances) || options.instances < 1) {
    throw new Error(`instances must be a positive integer, got ${options.instances}`)
  }
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'payload-cluster-'))
  mkdirSync(dir, { recursive: true })
  // nginx's workers (www-data when started by root) reach their temp files through this directory.
  chmodSync(dir, 0o755)
  const frontPort = options.frontPort ?? (await freePort())
  const frontUrl = `http://127.0.0.1:${frontPort}`
  const ports = await distinctFreePorts(options.instances, frontPort)
  const metricsToken = options.prometheus
    ? (options.env.METRICS_TOKEN ?? randomBytes(24).toString('hex'))
    : undefined
  const instances = ports.map((port, i) =>
    createServiceInstance({
      name: `i${i + 1}`,
      port,
      env: {
        LOG_LEVEL: options.logLevel ?? 'info',
        // Behind the shipped nginx, which appends the client's address to X-Forwarded-For.
        TRUST_PROXY_HOPS: '1',
        // Every client of a cluster on this machine is 127.0.0.1, so the default limit (120 per
        // minute) would refuse a load test's unpaid 402s: a high one keeps the limiter on the path.
        RATE_LIMIT_POINTS: '1000000',
        ...options.env,
        ...(metricsToken ? { METRICS_TOKEN: metricsToken } : {}),
        PUBLIC_BASE_URL: frontUrl,
      },
      logFile: join(dir, `i${i + 1}.log`),
    }),
  )
  let nginx: Nginx | undefined
  let prometheus: Prometheus | undefined
  const stopAll = async () => {
    await Promise.all([
      prometheus?.stop(),
      nginx?.stop(),
      ...instances.map((instance) => instance.stop()),
    ])
  }
  try {
    const started = await Promise.allSettled(instances.map((instance) => instance.start()))
    const failed = started.find((s): s is PromiseRejectedResult => s.status === 'rejected')
    if (failed) throw failed.reason
    nginx = await startNginx({
      instances: ports.map((port) => `127.0.0.1:${port}`),
      port: frontPort,
      dir: join(dir, 'nginx'),
    })
    // The instances answered their own /health already; through nginx on a loaded machine the
    // first answers can still take seconds (a CI run beside other suites missed 10 s).
    await waitFor(
      'front /health',
      async () => (await fetch(`${frontUrl}/health`, { signal: AbortSignal.timeout(5_000) })).ok,
      { timeoutMs: 60_000 },
    )
    if (metricsToken) {
      prometheus = await startPrometheus({
        targets: ports.map((port) => `127.0.0.1:${port}`),
        token: metricsToken,
        dir: join(dir, 'prometheus'),
      })
    }
  } catch (error) {
    await stopAll()
    throw error
  }
  let stopping: Promise<void> | undefined
  return {
    frontUrl,
    instances,
    nginx,
    ...(prometheus ? { prometheus } : {}),
    ...(metricsToken ? { metricsToken } : {}),
    dir,
    stop() {
      stopping ??= stopAll()
      return stopping
    },
  }
}

/** `count` free ports, none equal to `taken` or to each other. */
async function distinctFreePorts(count: number, taken: number): Promise<number[]> {
  const ports = new Set<number>([taken])
  while (ports.size < count + 1) ports.add(await freePort())
  return [...ports].slice(1)
}
