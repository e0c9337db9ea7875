import { createHash } from 'node:crypto'
import canonicalize from 'canonicalize'
import { toInputIssues } from '../tools/input-issues.js'
import { type ToolDefinition, ToolError } from '../tools/types.js'
import { safeParseUntrusted } from '../tools/untrusted-parse.js'
import { frame, unframe } from './framed.js'
import {
  type CheckOutcome,
  type CheckReply,
  type CheckTask,
  type CheckVerdict,
  type FieldRead,
  type FieldsOutcome,
  type FieldsTask,
  MAX_FIELD_TEXT,
} from './task.js'

const decoder = new TextDecoder()
const encoder = new TextEncoder()

/**
 * A checked input: the RFC 8785 (JSON Canonicalization Scheme) form of the parsed input, defaults
 * applied, as UTF-8 bytes, and the lower-case hex SHA-256 of those bytes. What the tool's worker
 * parses, what the duplicate-settlement guard fingerprints and what a delivery receipt's
 * `input_sha256` states are this one value.
 *
 * @example { bytes: <UTF-8 of {"algorithm":"SHA-256","input":"abc"}>, digest: '5b1c…' }
 */
export interface CheckedInput {
  /** UTF-8 of the RFC 8785 canonical JSON of the parsed input. */
  bytes: Uint8Array
  /** Lower-case hex SHA-256 of `bytes`. */
  digest: string
}

/**
 * A checked input made on the calling thread, from a value already parsed and checked (unit
 * tests, and the inline runner of the adapters' tests). The service checks on a worker
 * ({@link checkBody}).
 *
 * @example checkedInput({ input: 'abc', algorithm: 'SHA-256' }).digest // 64 hex digits
 * @throws {TypeError} when the value has no RFC 8785 form (a non-finite number)
 */
export function checkedInput(value: unknown): CheckedInput {
  return unframe(canonicalFrame(value))
}

/** The RFC 8785 JSON of a value, framed with its SHA-256 (framed.ts). */
function canonicalFrame(value: unknown): Uint8Array {
  const canonical = canonicalize(value)
  if (canonical === undefined) throw new TypeError('the value has no JSON form')
  return frame(encoder.encode(canonical), canonical)
}

/**
 * A checker's reply as the gate reads it: an `ok` frame becomes the checked input.
 *
 * @example readCheckReply(checkValue(hashTool, { input: 'abc' })) // { status: 'ok', bytes, digest }
 */
export function readCheckReply(reply: CheckReply): CheckOutcome {
  if (reply instanceof Uint8Array) return { status: 'ok', ...unframe(reply) }
  // A verdict-only reply has no form to run or fingerprint: a fault of the caller's task.
  return reply.status === 'valid' ? { status: 'crash', name: 'NoCanonicalForm' } : reply
}

/**
 * A checker's reply as a verdict: `valid` for a form (a full check's `ok`), refusals as they are.
 *
 * @example readVerdict(checkValue(hashTool, { input: 'abc' }, true)) // { status: 'valid' }
 */
export function readVerdict(reply: CheckReply): CheckVerdict {
  return reply instanceof Uint8Array ? VALID : reply
}

const VALID: CheckVerdict = Object.freeze({ status: 'valid' })

/**
 * The `arguments` of the `tools/call` request `id` in a parsed JSON-RPC body (one message or a
 * batch), exactly as JSON.parse built them; `undefined` when absent.
 *
 * @example callArguments(JSON.parse('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"payload_hash","arguments":{"input":"abc"}}}'), 1)
 * // { input: 'abc' }
 */
export function callArguments(body: unknown, id: string | number): unknown {
  const messages = Array.isArray(body) ? body : [body]
  const call = messages.find((m) => isObject(m) && m.method === 'tools/call' && m.id === id)
  return isObject(call) && isObject(call.params) ? call.params.arguments : undefined
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * The input check of one call, on a checker thread: decodes the UTF-8 body (invalid sequences
 * become U+FFFD, as `Request.text()` does), parses it as JSON, takes the `tools/call` arguments for
 * MCP, then checks them against the tool's Zod schema (defaults applied, unknown keys refused) and
 * its shape check (`ToolDefinition.check`: Unicode, depth, number range, sizes), and gives the
 * RFC 8785 form of the checked value with its SHA-256. Never throws.
 *
 * An HTTP body that is empty or only whitespace is `absent`: for an unpaid request there is no
 * input to check, for a paid one the gate refuses it. MCP arguments that are absent are `{}`.
 *
 * @param tools - the catalogue the worker loaded, by id
 * @example
 * checkBody(byId, { kind: 'check', tool: 'hash', body: utf8('{"input":"abc"}') })
 * // <SHA-256 + canonical JSON> (read it with readCheckReply)
 */
export function checkBody(tools: ReadonlyMap<string, ToolDefinition>, task: CheckTask): CheckReply {
  const tool = tools.get(task.tool)
  if (!tool) return { status: 'crash', name: 'UnknownTool' }
  return checkToolBody(tool, task)
}

/**
 * {@link checkBody} with the tool at hand: how the runner checks a small body on the calling
 * thread (`INLINE_CHECK_BYTES` in runner.ts), with the very code a checker thread runs. Never
 * throws.
 *
 * @example readCheckReply(checkToolBody(hashTool, { kind: 'check', tool: 'hash', body: utf8('{"input":"abc"}') }))
 */
export function checkToolBody(tool: ToolDefinition, task: CheckTask): CheckReply {
  const text = decoder.decode(task.body)
  if (task.mcpRequestId === undefined && text.trim() === '') return { status: 'absent' }
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch (error) {
    return { status: 'invalid_json', message: `Malformed JSON body: ${(error as Error).message}` }
  }
  let input: unknown = parsed
  if (task.mcpRequestId !== undefined) input = callArguments(parsed, task.mcpRequestId) ?? {}
  else if (task.field !== undefined) {
    if (!isObject(parsed) || !Object.hasOwn(parsed, task.field)) return { status: 'absent' }
    input = parsed[task.field]
  }
  return checkValue(tool, input, task.verdictOnly)
}

/**
 * Reads some top-level fields of a JSON object body (see {@link FieldsTask}). Never throws.
 *
 * @example readFields({ kind: 'fields', body: utf8('{"receipt":"ey…","result":{"a":1}}'), names: ['receipt', 'result'] })
 * // { status: 'ok', keys: ['receipt', 'result'], fields: { receipt: { text: 'ey…', digest }, result: { digest } } }
 */
export function readFields(task: FieldsTask): FieldsOutcome {
  let parsed: unknown
  try {
    parsed = JSON.parse(decoder.decode(task.body))
  } catch (error) {
    return { status: 'invalid_json', message: `Malformed JSON body: ${(error as Error).message}` }
  }
  if (!isObject(parsed)) return { status: 'invalid', message: 'The body must be a JSON object' }
  const fields: Partial<Record<string, FieldRead>> = {}
  for (const name of task.names) {
    if (!Object.hasOwn(parsed, name)) continue
    const value = parsed[name]
    let canonical: string | undefined
    try {
      canonical = canonicalize(value)
    } catch {
      canonical = undefined
    }
    if (canonical === undefined) {
      return {
        status: 'invalid',
        message: `/${name} has no JSON form (a number beyond the double range?)`,
      }
    }
    fields[name] = {
      digest: createHash('sha256').update(canonical).digest('hex'),
      ...(typeof value === 'string' && value.length <= MAX_FIELD_TEXT ? { text: value } : {}),
    }
  }
  return { status: 'ok', fields, keys: Object.keys(parsed) }
}

/**
 * Checks a parsed input against a tool: its Zod schema ({@link safeParseUntrusted}), then its
 * shape check, then its RFC 8785 form, framed with its SHA-256 (none with `verdictOnly`: `valid`).
 * Never throws: a ToolError of the check is `refused`, anything else thrown (a fault of our own
 * code) is `crash`.
 *
 * @example readCheckReply(checkValue(hashTool, { input: 'abc' })) // { status: 'ok', bytes, digest }
 * @example checkValue(hashTool, { input: 'abc' }, true) // { status: 'valid' }
 */
export function checkValue(tool: ToolDefinition, input: unknown, verdictOnly = false): CheckReply {
  try {
    const parsed = safeParseUntrusted(tool.input, input)
    if (!parsed.success) return { status: 'invalid', issues: toInputIssues(parsed.error) }
    tool.check(parsed.data)
    return verdictOnly ? VALID : canonicalFrame(parsed.data)
  } catch (error) {
    if (error instanceof ToolError) {
      return {
        status: 'refused',
        error: {
          code: error.code,
          message: error.message,
          ...(error.details ? { details: error.details } : {}),
        },
      }
    }
    // A message may quote the input: only the name travels.
    return { status: 'crash', name: error instanceof Error ? error.name : typeof error }
  }
}
