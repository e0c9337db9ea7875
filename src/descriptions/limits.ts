import { formatBytes } from '../tools/limits.js'

/** The service-wide limits of one deployment (the tools' own limits are in each catalogue entry). */
export interface ServiceLimitSettings {
  /** Largest request body, in bytes. */
  maxBodyBytes: number
  /** TOOL_WORKERS */
  workers: number
  /** TOOL_TIMEOUT_MS */
  timeoutMs: number
  /** TOOL_QUEUE_LIMIT */
  queueLimit: number
  /** RATE_LIMIT_POINTS per RATE_LIMIT_DURATION_S (in seconds); absent: no rate limit. */
  rateLimit?: { points: number; durationSeconds: number }
}

/** One limit as the discovery documents state it. */
export interface LimitDoc {
  /** What is limited. */
  limit: string
  /** Its value in this deployment. */
  value: string
  /** The environment variable that sets it, if any. */
  variable?: string
  /** The failure `code` a request beyond it gets. */
  code: string
}

/** Where the complete list lives (every tool limit, header sizes, shutdown), in the sources. */
export const LIMITS_DOC = 'docs/limits.md'

/**
 * The service-wide limits, for llms.txt and the OpenAPI description; docs/limits.md lists them
 * with every other limit.
 *
 * @example
 * serviceLimits({ maxBodyBytes: 1048576, workers: 2, timeoutMs: 2000, queueLimit: 4 })[1]
 * // { limit: 'Run time of one tool call', value: '2000 ms', variable: 'TOOL_TIMEOUT_MS',
 * //   code: 'tool_timeout' }
 */
export function serviceLimits(settings: ServiceLimitSettings): LimitDoc[] {
  return [
    {
      limit: 'Request body (HTTP and MCP)',
      value: formatBytes(settings.maxBodyBytes),
      code: 'payload_too_large',
    },
    {
      limit: 'Run time of one tool call',
      value: `${settings.timeoutMs} ms`,
      variable: 'TOOL_TIMEOUT_MS',
      code: 'tool_timeout',
    },
    {
      limit: 'Tool calls running or queued at once, for a new paid call to be admitted',
      value: `${settings.workers + settings.queueLimit}, ${settings.workers} workers + ${settings.queueLimit} queued`,
      variable: 'TOOL_WORKERS, TOOL_QUEUE_LIMIT',
      code: 'overloaded',
    },
    ...(settings.rateLimit
      ? [
          {
            limit:
              'Unpaid requests per client (402s, discovery, /stats, MCP listing); paid calls are never limited',
            value: `${settings.rateLimit.points} per ${settings.rateLimit.durationSeconds} s`,
            variable: 'RATE_LIMIT_POINTS, RATE_LIMIT_DURATION_S',
            code: 'rate_limited',
          },
        ]
      : []),
  ]
}

/**
 * The limits as Markdown list items, without markers.
 *
 * @example limitLines(serviceLimits(settings))[0] // 'Request body (HTTP and MCP): 1 MiB (`payload_too_large`).'
 */
export function limitLines(limits: readonly LimitDoc[]): string[] {
  return limits.map(
    (l) =>
      `${l.limit}: ${l.value}${
        l.variable
          ? ` (${l.variable
              .split(', ')
              .map((v) => `\`${v}\``)
              .join(', ')})`
          : ''
      }; beyond it \`${l.code}\`.`,
  )
}
