import { locateMembers } from '../json-locate.js'
import { MESSAGE_BOUNDS, type MessagesOutcome, readMessages } from '../runner/messages.js'
import { PAYMENT_META_KEY } from './results.js'

/**
 * Largest envelope of a paid `tools/call` read on the thread that serves requests, in bytes: its
 * JSON-RPC body without its `arguments` (room for a 32 KiB x402 payment and what MCP clients send
 * beside it).
 */
export const MAX_ENVELOPE_BYTES = 64 * 1024

const utf8 = new TextEncoder()
const PAYMENT_KEY = Buffer.from(utf8.encode(PAYMENT_META_KEY))
const TOOLS_CALL = Buffer.from(utf8.encode('"tools/call"'))
const EMPTY_OBJECT = utf8.encode('{}')
const OPEN_OBJECT = 0x7b
const PATHS = [['method'], ['params', 'arguments'], ['params', '_meta', PAYMENT_META_KEY]]

/**
 * The envelope of a paid `tools/call`, for when the free lane cannot read its body (full, or out
 * of time): the JSON-RPC body with its `arguments` object cut out (`{}`), read by the very
 * {@link readMessages} a checker thread runs, here, as it is small. It gives what reading the whole
 * body would (that read empties every `arguments` object too). The arguments stay in the body,
 * for the gate's input check, which its payment must earn the paid lane for.
 *
 * The lane is chosen by structure, never by the bytes: only a body that is one `tools/call`
 * (not a batch) whose `params._meta["x402/payment"]` is present has an envelope, found by
 * {@link locateMembers} without building the body; text that mentions the key anywhere else, in
 * the arguments for one, buys nothing.
 *
 * @returns the read envelope, or undefined when the body has none (no payment at that place, a
 *   batch, arguments that are not an object, an envelope over {@link MAX_ENVELOPE_BYTES}, keys
 *   along the way written with escapes or more than {@link MESSAGE_BOUNDS} members)
 * @example readPaidEnvelope(body) // { status: 'ok', count: 1, json: '{"jsonrpc":"2.0",…,"arguments":{},"_meta":{"x402/payment":{…}}}}' }
 */
export function readPaidEnvelope(body: Uint8Array): MessagesOutcome | undefined {
  const bytes = Buffer.from(body.buffer, body.byteOffset, body.byteLength)
  if (!bytes.includes(PAYMENT_KEY)) return undefined
  const [method, args, payment] = locateMembers(bytes, PATHS, MESSAGE_BOUNDS.members)
  if (!method || !payment) return undefined
  if (!bytes.subarray(method.start, method.end).equals(TOOLS_CALL)) return undefined
  if (args && bytes[args.start] !== OPEN_OBJECT) return undefined
  const cut = args ? args.end - args.start - EMPTY_OBJECT.length : 0
  if (bytes.length - cut > MAX_ENVELOPE_BYTES) return undefined
  const envelope = args
    ? Buffer.concat([bytes.subarray(0, args.start), EMPTY_OBJECT, bytes.subarray(args.end)])
    : bytes
  return readMessages(envelope)
}
