import { pino } from 'pino'

/**
 * The project's structured logger (pino, JSON lines on stdout).
 *
 * Never log request bodies, tool inputs or outputs, HMAC secrets, payment payloads or raw payer
 * addresses: log tool ids, status codes, durations, networks and error codes only.
 *
 * @example
 * logger.info({ tool: 'hash', status: 200, ms: 12 }, 'paid call')
 */
export const logger = pino({
  level: process.env.LOG_LEVEL || (process.env.VITEST ? 'silent' : 'info'),
  base: undefined,
  redact: {
    paths: ['secret', '*.secret', 'payer', '*.payer', 'paymentPayload', '*.paymentPayload'],
    censor: '[redacted]',
  },
})

export type Logger = typeof logger
