import { logger } from '../logger.js'
import type { CheckedInput } from '../runner/check.js'
import { CheckTimeoutError, OverloadedError } from '../runner/errors.js'
import type { InputSource, ToolRunner } from '../runner/runner.js'
import type { CheckOutcome, CheckVerdict } from '../runner/task.js'
import { ToolError } from '../tools/types.js'
import { type InputCheck, InvalidInputError, InvalidJsonError } from './errors.js'
import type { PaidLane } from './paid-lane.js'
import type { PaidCall } from './types.js'

/**
 * The input check of a call that presents a payment, before its payment is verified: on the
 * runner's free lane, like all work on a request without verified money. When that lane cannot
 * make it (full, or out of time), the payment must earn the paid lane first (`earn`: a payment
 * held by the guard, or one that verifies), then the check runs there. A paid call's check is
 * thus never refused because free work fills the free lane, and a payment that fails verify never
 * reaches the paid lane's threads.
 *
 * @param earn - earns the paid lane ({@link earnPaidLane}); called only when the free lane fails
 * @returns the checked input (its RFC 8785 bytes and their SHA-256), and the paid lane if earned
 * @throws {InvalidJsonError} no body, or not JSON
 * @throws {InvalidInputError} the tool's schema refused it
 * @throws {ToolError} the tool's shape check refused it (its code), or the check crashed
 * @throws what `earn` throws, then {OverloadedError} or {CheckTimeoutError} from the paid lane
 * @example const { checked, lane } = await checkInput(runner, call, () => earnPaidLane(parts, read))
 */
export async function checkInput(
  runner: ToolRunner,
  call: PaidCall,
  earn: () => Promise<PaidLane>,
): Promise<{ checked: CheckedInput; lane?: PaidLane }> {
  const source = call.source ?? { body: new Uint8Array(0) }
  try {
    // A copy goes to the free lane: a checker takes the buffer it is given, and the paid lane
    // may need the body after it.
    const outcome = await runner.check(call.tool, { ...source, body: source.body.slice() }, 'free')
    return { checked: checkedOf(outcome) }
  } catch (error) {
    if (!(error instanceof OverloadedError || error instanceof CheckTimeoutError)) throw error
  }
  const lane = await earn()
  return { checked: checkedOf(await runner.check(call.tool, source, 'paid')), lane }
}

/**
 * The checked input of a check's outcome, or the refusal of the call.
 *
 * @throws the refusals of {@link checkInput}
 */
function checkedOf(outcome: CheckOutcome): CheckedInput {
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
 * would be refused for, or `valid` (a verdict only: a 402 needs no RFC 8785 form). When the lane is
 * full or the check runs out of time, the 402 is answered all the same, saying the body was not
 * checked (`valid: null`).
 *
 * @returns undefined when there is no input to check (an empty HTTP body)
 * @example await freeInputCheck(runner, tool, { body }) // { valid: true, errors: [] }
 */
export async function freeInputCheck(
  runner: ToolRunner,
  tool: PaidCall['tool'],
  source: InputSource,
): Promise<InputCheck | undefined> {
  let outcome: CheckVerdict
  try {
    outcome = await runner.verdict(tool, source, 'free')
  } catch (error) {
    if (error instanceof OverloadedError) return { valid: null, errors: [], reason: BUSY }
    if (error instanceof CheckTimeoutError) return { valid: null, errors: [], reason: SLOW }
    throw error
  }
  switch (outcome.status) {
    case 'valid':
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
