import type { ToolErrorCode } from '../tools/errors.js'
import type { InputIssue } from '../tools/input-issues.js'
import type { MessagesTask } from './messages.js'

/**
 * One tool call as posted to a worker: the tool id, its checked input (the RFC 8785 JSON that the
 * input check made, see `CheckedInput`) in a buffer the worker receives without a copy, and the
 * clock, read on the main thread so that a test's fixed clock reaches the worker.
 *
 * Bytes rather than the value: the structured clone of a 1 MiB string blocks the main thread; the
 * transfer costs nothing.
 *
 * @example { kind: 'run', tool: 'hash', input: <UTF-8 of {"algorithm":"SHA-256","input":"abc"}>, nowSeconds: 1700000000 }
 */
export interface ToolTask {
  kind: 'run'
  /** `ToolDefinition.id` in the catalogue the worker loaded. */
  tool: string
  /** UTF-8 JSON of the checked input; its buffer is transferred. */
  input: Uint8Array
  /** The tools' clock (`ToolEnv.nowSeconds`) for this call, in whole Unix seconds. */
  nowSeconds: number
}

/**
 * One input check as posted to a checker thread: the raw request body (HTTP: the tool's JSON body;
 * MCP: the JSON-RPC body, whose `tools/call` with `mcpRequestId` holds the arguments), its buffer
 * transferred. Parsing and checking a body of up to 1 MiB happens there, never on the thread
 * that serves requests.
 */
export interface CheckTask {
  kind: 'check'
  tool: string
  /** UTF-8 request body; its buffer is transferred. */
  body: Uint8Array
  /** MCP only: the JSON-RPC id of the `tools/call` whose `arguments` are the input. */
  mcpRequestId?: string | number
  /**
   * The top-level key of the body's JSON object that holds the input (`input` in a
   * `POST /receipts/verify` body); absent: the body is the input.
   */
  field?: string
  /**
   * Only the verdict: the checker stops after the shape check and makes no RFC 8785 form (the
   * free check of an unpaid body, which nothing fingerprints or runs); its `ok` is `valid`.
   */
  verdictOnly?: true
}

/**
 * A read of some top-level fields of a JSON object body, on a checker thread: for each name,
 * whether it is there, its text when it is a string, and the SHA-256 of its RFC 8785 form.
 */
export interface FieldsTask {
  kind: 'fields'
  /** UTF-8 request body; its buffer is transferred. */
  body: Uint8Array
  names: string[]
}

/** One field of a {@link FieldsOutcome}. */
export interface FieldRead {
  /** The value, when it is a string of at most {@link MAX_FIELD_TEXT} characters. */
  text?: string
  /** Lower-case hex SHA-256 of the RFC 8785 form of the value. */
  digest: string
}

/** Longest string a {@link FieldsTask} brings back as text (64 Ki characters). */
export const MAX_FIELD_TEXT = 64 * 1024

/**
 * What a checker reads of a body's fields: `ok` with the requested fields that are present and
 * every key of the object; or why it could not (not JSON, not an object, a value with no RFC 8785
 * form such as a number beyond the double range).
 */
export type FieldsOutcome =
  | { status: 'ok'; fields: Partial<Record<string, FieldRead>>; keys: string[] }
  | { status: 'invalid_json'; message: string }
  | { status: 'invalid'; message: string }

/** A `ToolError` as plain data: error classes do not survive the structured clone. */
export interface ToolErrorData {
  code: ToolErrorCode
  message: string
  details?: Record<string, unknown>
}

/**
 * What a checker answers:
 * - `ok`: the RFC 8785 JSON of the parsed input (defaults applied) and its SHA-256 (hex);
 * - `absent`: an HTTP body that is empty or whitespace (no input);
 * - `invalid_json`: not JSON (the parser's message);
 * - `invalid`: the tool's schema refused it (JSON Pointer issues);
 * - `refused`: the tool's shape check refused it (a tool code, e.g. `number_out_of_range`);
 * - `crash`: anything else (a bug); only the error's name travels.
 */
export type CheckOutcome =
  | { status: 'ok'; bytes: Uint8Array; digest: string }
  | { status: 'absent' }
  | { status: 'invalid_json'; message: string }
  | { status: 'invalid'; issues: InputIssue[] }
  | { status: 'refused'; error: ToolErrorData }
  | { status: 'crash'; name: string }

/** Every {@link CheckOutcome} but `ok`: why a check refused an input, or that it had none. */
export type CheckRefusal = Exclude<CheckOutcome, { status: 'ok' }>

/**
 * What a check without the RFC 8785 form answers ({@link CheckTask.verdictOnly}): `valid` where
 * a full check would answer `ok`, and the same refusals.
 */
export type CheckVerdict = { status: 'valid' } | CheckRefusal

/**
 * A {@link CheckOutcome} as a checker thread sends it: `ok` as one transferred buffer (see
 * `frame` in framed.ts: the SHA-256, then the canonical JSON), the others as plain data; a
 * verdict-only check's `valid` as it is.
 */
export type CheckReply = Uint8Array | CheckVerdict

/**
 * What a tool worker answers: the result (the SHA-256 of its RFC 8785 form, then its JSON, in one
 * transferred buffer: see `frame` in framed.ts), the tool's refusal (a `ToolError`), or the name
 * of anything else the tool threw (a bug; its message may quote the input, so only the name
 * travels).
 */
export type TaskOutcome =
  | Uint8Array
  | { ok: false; error: ToolErrorData }
  | { ok: false; crash: string }

/** The warm-up task: a worker answers it with `null` once it has loaded the tools. */
export const PING = 'ping'

/** What the runner posts to a worker. */
export type WorkerTask = ToolTask | CheckTask | FieldsTask | MessagesTask | typeof PING
