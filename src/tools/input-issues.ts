import type { z } from 'zod'

/**
 * One problem with a request body or MCP arguments; `path` is a JSON Pointer (RFC 6901) into the
 * input, `""` the root.
 */
export interface InputIssue {
  path: string
  message: string
  /** The tool code of a shape refusal (e.g. `number_out_of_range`); absent for schema issues. */
  code?: string
}

/**
 * Zod's words for a missing field: JSON has no `undefined`, so a value "received undefined" is a
 * field the body left out.
 */
const MISSING = /^Invalid input: expected (.+), received undefined$/

/**
 * The message of one Zod issue, for people: a missing field says "Required" (with the type it
 * takes) rather than Zod's "Invalid input: expected string, received undefined".
 *
 * @example issueMessage({ code: 'invalid_type', message: 'Invalid input: expected string, received undefined', … })
 * // 'Required (expected string)'
 */
function issueMessage(issue: z.core.$ZodIssue): string {
  if (issue.code !== 'invalid_type') return issue.message
  const missing = MISSING.exec(issue.message)
  return missing ? `Required (expected ${missing[1]})` : issue.message
}

/**
 * Converts Zod issues to JSON Pointer paths (RFC 6901).
 *
 * @example
 * toInputIssues(error) // [{ path: '/operations/0/type', message: 'Invalid option: …' }]
 * toInputIssues(missingKey) // [{ path: '/key', message: 'Required (expected string)' }]
 */
export function toInputIssues(error: z.ZodError): InputIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path
      .map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`)
      .join(''),
    message: issueMessage(issue),
  }))
}
