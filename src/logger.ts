import { type LoggerOptions, pino } from 'pino'
import { currentRequestId } from './request-context.js'

/**
 * `LOG_FORMAT=pretty`: one coloured line per entry for a person at a terminal (`npm run dev`),
 * through pino's transport to pino-pretty, a dev dependency; JSON lines otherwise.
 */
const pretty =
  process.env.LOG_FORMAT === 'pretty'
    ? {
        transport: {
          target: 'pino-pretty',
          options: { singleLine: true, translateTime: 'HH:MM:ss', ignore: 'pid,hostname' },
        },
      }
    : {}

/** The options of {@link logger} (a test captures what it writes with them). */
export const loggerOptions: LoggerOptions = {
  ...pretty,
  level: process.env.LOG_LEVEL || (process.env.VITEST ? 'silent' : 'info'),
  base: undefined,
  // Called only for lines that are written (after the level check); pino merges into the object
  // returned, so it must be a fresh one.
  mixin: () => {
    const id = currentRequestId()
    return id === undefined ? {} : { request_id: id }
  },
  redact: {
    paths: [
      'secret',
      '*.secret',
      'payer',
      '*.payer',
      'paymentPayload',
      '*.paymentPayload',
      // Facilitator credentials (src/facilitators/): never logged, redacted should one slip in.
      'authorization',
      '*.authorization',
      '*.headers.authorization',
      '*.headers.Authorization',
      'apiKeySecret',
      '*.apiKeySecret',
    ],
    censor: '[redacted]',
  },
}

/**
 * The project's structured logger (pino, JSON lines on stdout). Every line written while a request
 * is served carries its `request_id` (the `X-Request-Id` of its response, src/http/request-id.ts),
 * whichever layer writes it.
 *
 * Never log request bodies, tool inputs or outputs, HMAC secrets, payment payloads or raw payer
 * addresses: log tool ids, status codes, durations, networks and error codes only.
 *
 * @example
 * logger.info({ tool: 'hash', status: 200, ms: 12 }, 'paid call')
 */
export const logger = pino(loggerOptions)

export type Logger = typeof logger

// 0x-prefixed EVM addresses and hashes, and base58 strings of Solana key or signature length.
const ADDRESS_LIKE = /\b0x[0-9a-fA-F]{40,}\b|\b[1-9A-HJ-NP-Za-km-z]{32,88}\b/g

/**
 * A loggable description of an error from outside our code (facilitator, network): its name and
 * at most 200 characters of its message, with anything shaped like an address, transaction hash
 * or signature replaced by `[redacted]`, since such messages may quote facilitator responses.
 *
 * @example
 * describeError(new Error('settle failed for 0x857b…6b66')) // 'Error: settle failed for [redacted]'
 */
export function describeError(error: unknown): string {
  if (!(error instanceof Error)) return typeof error
  return `${error.name}: ${error.message.slice(0, 200).replace(ADDRESS_LIKE, '[redacted]')}`
}
