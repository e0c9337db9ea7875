import { TOOL_ERROR_CODES } from '../tools/errors.js'
import { SERVICE_ERROR_CODES } from './errors.js'

/** One machine-readable failure `code` with its HTTP status and meaning. */
export interface ErrorCodeDoc {
  code: string
  /** HTTP status it comes with (MCP carries the same code in an `isError` result). */
  status: number
  meaning: string
  /** `service` for the codes of the HTTP and payment layers, else the tool id that raises it. */
  source: string
}

/**
 * The service-level codes of {@link SERVICE_ERROR_CODES}, in table order.
 *
 * @example
 * serviceErrorCodes()[0] // { code: 'payment_required', status: 402, meaning: '…', source: 'service' }
 */
export function serviceErrorCodes(): ErrorCodeDoc[] {
  return Object.entries(SERVICE_ERROR_CODES).map(([code, { status, meaning }]) => ({
    code,
    status,
    meaning,
    source: 'service',
  }))
}

/**
 * The tool codes of {@link TOOL_ERROR_CODES} (all 400), after the service codes: the complete list
 * a client can meet.
 *
 * @example
 * allErrorCodes().find((c) => c.code === 'invalid_base64')?.status // 400
 */
export function allErrorCodes(): ErrorCodeDoc[] {
  return [
    ...serviceErrorCodes(),
    ...Object.entries(TOOL_ERROR_CODES).map(([code, { tools, meaning }]) => ({
      code,
      status: 400,
      meaning,
      source: tools,
    })),
  ]
}
