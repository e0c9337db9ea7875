import { pathToFileURL } from 'node:url'
import { loadConfig } from './config.js'
import { logger } from './logger.js'

/** How long the probe waits for `/health`, in milliseconds: below the Dockerfile's `--timeout=5s`. */
export const HEALTHCHECK_TIMEOUT_MS = 4000

/**
 * The URL of this instance's `GET /health`, from the same environment the service reads
 * (`HOST`, `PORT`, their defaults from src/config.ts). A wildcard bind address (`0.0.0.0`, `::`,
 * the container image's default) is reached on loopback.
 *
 * @example healthcheckUrl({ HOST: '0.0.0.0', PORT: '8402' }) // 'http://127.0.0.1:8402/health'
 * @throws {Error} when the environment is not a valid configuration (the service would not start)
 */
export function healthcheckUrl(env: Record<string, string | undefined> = process.env): string {
  const { host, port } = loadConfig(env)
  const reachable = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '::1' : host
  return `http://${reachable.includes(':') ? `[${reachable}]` : reachable}:${port}/health`
}

/**
 * The container's `HEALTHCHECK` (`node dist/healthcheck.js`, see the Dockerfile): healthy when
 * `GET /health` answers 200 within {@link HEALTHCHECK_TIMEOUT_MS}. A `degraded` body is still
 * healthy: the process serves, and an outage of a shared dependency (facilitator, PostgreSQL,
 * Redis) must not mark every instance unhealthy at once (docs/deploy.md, Health checks).
 *
 * @example await probeHealth('http://127.0.0.1:8402/health') // { healthy: true, detail: '200 ok' }
 * @returns `detail` is the status and the body's `status`, or the reason the request failed
 */
export async function probeHealth(
  url: string,
  timeoutMs = HEALTHCHECK_TIMEOUT_MS,
): Promise<{ healthy: boolean; detail: string }> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) })
    const body = (await res.json().catch(() => ({}))) as { status?: unknown }
    return { healthy: res.status === 200, detail: `${res.status} ${String(body.status)}` }
  } catch (error) {
    const cause = (error as { cause?: { code?: string } }).cause?.code
    return { healthy: false, detail: cause ?? (error as Error).name }
  }
}

// Run as a program (the image's HEALTHCHECK): exit 0 healthy, 1 unhealthy, as Docker expects,
// after one JSON log line like the service's (the container runtime keeps it as the check's output).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const url = healthcheckUrl()
  const { healthy, detail } = await probeHealth(url)
  if (healthy) logger.info({ url, detail }, 'healthy')
  else logger.warn({ url, detail }, 'unhealthy')
  logger.flush(() => process.exit(healthy ? 0 : 1))
}
