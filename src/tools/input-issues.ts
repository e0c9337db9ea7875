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
 * Converts Zod issues to JSON Pointer paths (RFC 6901).
 *
 * @example
 * toInputIssues(error) // [{ path: '/operations/0/type', message: 'Invalid option: …' }]
 */
export function toInputIssues(error: z.ZodError): InputIssue[] {
  return error.issues.map((issue) => ({
    path: issue.path
      .map((p) => `/${String(p).replaceAll('~', '~0').replaceAll('/', '~1')}`)
      .join(''),
    message: issue.message,
  }))
}
