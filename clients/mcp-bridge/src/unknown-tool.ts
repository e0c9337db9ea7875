import { ProtocolErrorCode } from '@modelcontextprotocol/server'

/** Most characters of an unknown name quoted back: the name is the caller's, of any length. */
const MAX_QUOTED_CHARS = 64

// The service's own (src/mcp/unknown-tool.ts), copied: the bridge imports nothing of the service;
// test/bridge-unknown-tool.test.ts checks that both give the same answers.

/**
 * The JSON-RPC error of a `tools/call` naming no tool: -32602 (MCP spec, "Error Handling"), its
 * message naming the closest tool and every tool, and `data` = `{tools, suggestion?}` for
 * programs. A plain Error with `code` and `data`, not the SDK's McpError, whose message carries
 * an "MCP error -32602: " prefix that the client adds a second time.
 */
export class UnknownToolError extends Error {
  override readonly name = 'UnknownToolError'
  readonly code = ProtocolErrorCode.InvalidParams
  /** `tools`: every tool name, in `tools/list` order; `suggestion`: the closest, when close. */
  readonly data: { tools: readonly string[]; suggestion?: string }

  /**
   * @param name - the name the call gave
   * @param tools - the listed tool names (the service's listing, then the spend tool)
   * @example
   * new UnknownToolError('payload_hsah', ['payload_hash', 'payload_base64']).message
   * // 'Unknown tool: payload_hsah. Did you mean payload_hash? The tools are payload_hash,
   * //  payload_base64 (tools/list describes them).'
   */
  constructor(name: string, tools: readonly string[]) {
    const suggestion = closestName(name, tools)
    const quoted = name.length > MAX_QUOTED_CHARS ? `${name.slice(0, MAX_QUOTED_CHARS)}…` : name
    super(
      `Unknown tool: ${quoted}.${suggestion ? ` Did you mean ${suggestion}?` : ''} ` +
        `The tools are ${tools.join(', ')} (tools/list describes them).`,
    )
    this.data = { tools, ...(suggestion ? { suggestion } : {}) }
  }
}

/**
 * The tool name closest to `name` by edit distance (insertions, deletions, substitutions and
 * swaps of two neighbours, case ignored), when it is at most a third of the longer name's
 * length (at least 1): a typo, not another word. Ties go to the earlier tool.
 *
 * @example closestName('payload_hsah', ['payload_hash', 'payload_hmac']) // 'payload_hash'
 * @example closestName('weather', ['payload_hash']) // undefined
 */
export function closestName(name: string, tools: readonly string[]): string | undefined {
  // Names longer than any tool by more than the allowed distance cannot match; this also bounds
  // the work on a name of any length.
  const longest = Math.max(0, ...tools.map((t) => t.length))
  if (name.length > longest * 2) return undefined
  const wanted = name.toLowerCase()
  let best: { tool: string; distance: number } | undefined
  for (const tool of tools) {
    const distance = editDistance(wanted, tool.toLowerCase())
    const allowed = Math.max(1, Math.floor(Math.max(name.length, tool.length) / 3))
    if (distance <= allowed && (!best || distance < best.distance)) best = { tool, distance }
  }
  return best?.tool
}

/** Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring). */
function editDistance(a: string, b: string): number {
  // rows[i][j]: distance between a's first i and b's first j characters.
  const rows: number[][] = Array.from({ length: a.length + 1 }, (_, i) =>
    Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)),
  )
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] as number[]
    const above = rows[i - 1] as number[]
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      let d = Math.min(
        (above[j] as number) + 1,
        (row[j - 1] as number) + 1,
        (above[j - 1] as number) + cost,
      )
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) {
        d = Math.min(d, ((rows[i - 2] as number[])[j - 2] as number) + 1)
      }
      row[j] = d
    }
  }
  return (rows[a.length] as number[])[b.length] as number
}
