import { logger } from '../logger.js'
import type { CheckedInput } from '../runner/check.js'
import { CheckTimeoutError, OverloadedError } from '../runner/errors.js'
import type { InputSource, ToolRunner } from '../runner/runner.js'
import type { CheckOutcome } from '../runner/task.js'
import { ToolError } from '../tools/types.js'
import { type InputCheck, InvalidInputError, InvalidJsonError } from './errors.js'
import type { PaidCall } from './types.js'

/**
 * The input check of a paid call, on the runner's paid lane, before its payment is verified.
 *
 * @returns the checked input: its RFC 8785 bytes and their SHA-256
 * @throws {InvalidJsonError} no body, or not JSON
 * @throws {InvalidInputError} the tool's schema refused it
 * @throws {ToolError} the tool's shape check refused it (its code), or the check crashed
 * @throws {OverloadedError} or {CheckTimeoutError} from the runner
 * @example const checked = await checkInput(runner, call)
 */
export async function checkInput(runner: ToolRunner, call: PaidCall): Promise<CheckedInput> {
  const source = call.source ?? { body: new Uint8Array(0) }
  const outcome = await runner.check(call.tool, source, 'paid')
  switch (outcome.status) {
    case 'ok':
      return { bytes: outcome.bytes, digest: outcome.digest }
    case 'absent':
      throw new InvalidJsonError('A JSON request body is required')
    case 'invalid_json':
      throw new InvalidJsonError(outcome.message)
    case 'invalid':
      throw new InvalidInputError(outcome.issues)
    case 'refused':
      throw new ToolError(outcome.error.code, outcome.error.message, outcome.error.details)
    case 'crash':
      logger.error({ err: outcome.name }, 'input check failed unexpectedly')
      throw new ToolError(
        'tool_failed',
        'The input check failed on this input; nothing was charged',
      )
  }
}

const BUSY =
  'The free input check is busy: the body was not checked. A paid call checks it before its payment is verified and charges nothing if it is invalid'
const SLOW =
  "The body could not be checked within the free check's time budget. A paid call checks it before its payment is verified and charges nothing if it is invalid"

/**
 * The free check of an unpaid body, on the runner's free lane: what a paid call with this body
 * would be refused for, or `valid`. When the lane is full or the check runs out of time, the 402
 * is answered all the same, saying the body was not checked (`valid: null`).
 *
 * @returns undefined when there is no input to check (an empty HTTP body)
 * @example await freeInputCheck(runner, tool, { body }) // { valid: true, errors: [] }
 */
export async function freeInputCheck(
  runner: ToolRunner,
  tool: PaidCall['tool'],
  source: InputSource,
): Promise<InputCheck | undefined> {
  let outcome: CheckOutcome
  try {
    outcome = await runner.check(tool, source, 'free')
  } catch (error) {
    if (error instanceof OverloadedError) return { valid: null, errors: [], reason: BUSY }
    if (error instanceof CheckTimeoutError) return { valid: null, errors: [], reason: SLOW }
    throw error
  }
  switch (outcome.status) {
    case 'ok':
      return { valid: true, errors: [] }
    case 'absent':
      return undefined
    case 'invalid_json':
      return { valid: false, errors: [{ path: '', message: outcome.message }] }
    case 'invalid':
      return { valid: false, errors: outcome.issues }
    case 'refused': {
      const field = outcome.error.details?.field
      const path =
        typeof field === 'string'
          ? field.startsWith('/') || field === ''
            ? field
            : `/${field}`
          : ''
      return {
        valid: false,
        errors: [{ path, message: outcome.error.message, code: outcome.error.code }],
      }
    }
    case 'crash':
      return { valid: false, errors: [{ path: '', message: 'The input could not be checked' }] }
  }
}
