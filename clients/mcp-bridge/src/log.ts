/** Where the bridge's log lines go. */
export type Log = (message: string) => void

/**
 * The bridge's logger: one line per message on stderr, because stdout carries only MCP JSON-RPC.
 * Callers never pass key material, arguments or results: only tool names, networks, amounts,
 * transaction ids and error messages.
 *
 * @example
 * stderrLog('signed payment for payload_hash on eip155:8453 (0.001 USDC)')
 * // stderr: payload-tools-mcp: signed payment for payload_hash on eip155:8453 (0.001 USDC)
 */
export const stderrLog: Log = (message) => {
  process.stderr.write(`payload-tools-mcp: ${message}\n`)
}

/**
 * Sends everything a library might print with `console.log`/`info`/`debug`/`warn` to stderr: in
 * stdio mode one stray line on stdout would corrupt the JSON-RPC stream.
 */
export function keepStdoutForJsonRpc(): void {
  const toStderr = (...args: unknown[]) => console.error(...args)
  console.log = toStderr
  console.info = toStderr
  console.debug = toStderr
  console.warn = toStderr
}
