import { type JsonBounds, jsonBoundExceeded } from '../json-bounds.js'

/**
 * One JSON-RPC 2.0 body (a message or a batch, as MCP's Streamable HTTP transport posts it) to
 * read on a checker thread; its buffer is transferred.
 */
export interface MessagesTask {
  kind: 'messages'
  /** UTF-8 request body. */
  body: Uint8Array
}

/**
 * What a JSON-RPC body holds once read: `ok` with its messages as JSON, every `params.arguments`
 * object replaced by `{}` (a tool's arguments are read and checked by the tool's own input check,
 * from the raw body); or why it cannot be served.
 */
export type MessagesOutcome =
  | { status: 'ok'; json: string; count: number }
  | { status: 'invalid_json'; message: string }
  | { status: 'out_of_bounds'; message: string }

/**
 * Bounds of a JSON-RPC body outside the arguments of its calls: room for a 32 KiB x402 payment in
 * `params._meta` and for what MCP clients send, nothing like the 90,000 `_meta` keys that the MCP
 * SDK's schemas would walk on the thread that serves requests.
 */
export const MESSAGE_BOUNDS: JsonBounds = {
  depth: 40,
  nodes: 4096,
  members: 64,
  string: 16 * 1024,
  text: 64 * 1024,
}

const decoder = new TextDecoder()

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Reads a JSON-RPC body within {@link MESSAGE_BOUNDS}, outside the arguments of its calls (see
 * {@link MessagesOutcome}). Runs where request bodies are parsed: on the calling thread for a
 * small body, on a checker thread otherwise. Never throws.
 *
 * @example readMessages(utf8('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payload_hash","arguments":{"input":"abc"}}}'))
 * // { status: 'ok', count: 1, json: '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payload_hash","arguments":{}}}' }
 */
export function readMessages(body: Uint8Array): MessagesOutcome {
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(body))
  } catch (error) {
    return { status: 'invalid_json', message: (error as Error).message }
  }
  const batch = Array.isArray(parsed)
  const messages = (batch ? parsed : [parsed]) as unknown[]
  if (messages.length > MESSAGE_BOUNDS.members) {
    return {
      status: 'out_of_bounds',
      message: `The JSON-RPC batch holds more than ${MESSAGE_BOUNDS.members} messages`,
    }
  }
  const reduced = messages.map(withoutArguments)
  const excess = jsonBoundExceeded(batch ? reduced : reduced[0], MESSAGE_BOUNDS)
  if (excess) {
    return {
      status: 'out_of_bounds',
      message: `The JSON-RPC body is out of bounds (tool arguments aside): ${excess}`,
    }
  }
  return {
    status: 'ok',
    json: JSON.stringify(batch ? reduced : reduced[0]),
    count: messages.length,
  }
}

/** A message whose `params.arguments` object is replaced by `{}`; anything else as it is. */
function withoutArguments(message: unknown): unknown {
  if (!isObject(message) || !isObject(message.params) || !isObject(message.params.arguments)) {
    return message
  }
  return { ...message, params: { ...message.params, arguments: {} } }
}
