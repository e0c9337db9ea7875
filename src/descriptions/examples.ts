import type { ToolDefinition, ToolEnv } from '../tools/types.js'

/**
 * The clock of every documented example: 2026-01-01T00:00:00Z in Unix seconds. A fixed clock keeps
 * the documents byte-for-byte reproducible (jwt-inspect reports validity against the clock), and
 * the bazaar extension must not change between a 402 and the paid retry that echoes it.
 */
export const EXAMPLE_NOW_SECONDS = 1_767_225_600

const exampleEnv: ToolEnv = { nowSeconds: () => EXAMPLE_NOW_SECONDS }

/** A tool's canonical example: the request body and the 200 response it produces. */
export interface ToolExample {
  /** The first catalogue example, as sent (defaults not applied). */
  body: Record<string, unknown>
  /** The `{ok: true, result}` envelope the body yields at {@link EXAMPLE_NOW_SECONDS}. */
  response: { ok: true; result: unknown }
}

/**
 * Runs a tool's first catalogue example, so that documents show real output, never a made-up one.
 *
 * @example
 * toolExample(hashTool).response.result.hex // 'b94d27b9…' (SHA-256 of "hello world")
 * @throws {Error} when the tool has no example, the example is not a JSON object, does not match
 *   the input schema, or the tool rejects it: a catalogue bug, caught when the app is built
 */
export function toolExample(tool: ToolDefinition): ToolExample {
  const body = tool.examples[0]
  if (body === null || typeof body !== 'object' || Array.isArray(body)) {
    throw new Error(`tool ${tool.id}: the first example must be a JSON object body`)
  }
  const parsed = tool.input.safeParse(body)
  if (!parsed.success) {
    throw new Error(`tool ${tool.id}: the first example does not match the input schema`)
  }
  const result = tool.run(parsed.data, exampleEnv)
  // A JSON round trip drops `undefined` members, as the HTTP response would.
  return {
    body: body as Record<string, unknown>,
    response: { ok: true, result: JSON.parse(JSON.stringify(result)) },
  }
}
