// The documented tables of failure codes, imported in this one place so that tests follow them
// when they move.
import { SERVICE_ERROR_CODES } from '../../src/descriptions/error-codes.js'
import { TOOL_ERROR_CODES } from '../../src/tools/errors.js'

export { SERVICE_ERROR_CODES, TOOL_ERROR_CODES }

/** Whether `code` is a documented tool code (always HTTP 400). */
export function isToolErrorCode(code: unknown): boolean {
  return typeof code === 'string' && Object.hasOwn(TOOL_ERROR_CODES, code)
}

/**
 * The HTTP status a documented `code` comes with: its {@link SERVICE_ERROR_CODES} entry, 400 for a
 * tool code, `undefined` for a code neither table documents.
 *
 * @example documentedStatus('invalid_base64') // 400
 */
export function documentedStatus(code: unknown): number | undefined {
  if (typeof code !== 'string') return undefined
  if (Object.hasOwn(SERVICE_ERROR_CODES, code)) {
    return SERVICE_ERROR_CODES[code as keyof typeof SERVICE_ERROR_CODES].status
  }
  return isToolErrorCode(code) ? 400 : undefined
}
