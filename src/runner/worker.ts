/**
 * The tool worker (a piscina worker module): runs one catalogue tool, or checks one call's input,
 * per task.
 *
 * Before any tool module loads (hence the dynamic import, after the settings below), the regex
 * engine is hardened for patterns that come from inputs (json-validate's `pattern` and
 * `patternProperties`): V8 falls back to its linear-time engine after 50,000 backtracks, and
 * `u`-flag patterns that mean the same without `u` are compiled without it so that the fallback
 * can apply (see linear-regexp.ts). V8 flags are process-wide; this one only ever replaces a
 * runaway backtracking search by an equivalent linear one.
 *
 * `workerData.catalog` (a module URL exporting `catalog`) replaces the tool catalogue in unit tests
 * of the runner; the service never sets it.
 */
import { setFlagsFromString } from 'node:v8'
import { workerData } from 'node:worker_threads'
import { move } from 'piscina'
import type { ToolDefinition } from '../tools/types.js'
import { checkBody, readFields } from './check.js'
import { installLinearUnicodeRegExp } from './linear-regexp.js'
import { type MessagesOutcome, readMessages } from './messages.js'
import { runTask } from './run-task.js'
import {
  type CheckReply,
  type FieldsOutcome,
  PING,
  type TaskOutcome,
  type WorkerTask,
} from './task.js'

setFlagsFromString('--enable-experimental-regexp-engine-on-excessive-backtracks')
installLinearUnicodeRegExp()

const source = (workerData as { catalog?: string } | undefined)?.catalog ?? '../tools/catalog.js'
const { catalog } = (await import(source)) as { catalog: readonly ToolDefinition[] }
const tools = new Map(catalog.map((tool) => [tool.id, tool]))

/**
 * Runs one task, a tool call ({@link runTask}) or an input check ({@link checkBody}); never
 * throws; answers the warm-up ping with `null`. A result, and a checked input, travel back as
 * their JSON bytes, moved rather than copied.
 */
export default function runWorkerTask(
  task: WorkerTask,
): TaskOutcome | CheckReply | FieldsOutcome | MessagesOutcome | null {
  if (task === PING) return null
  if (task.kind === 'fields') return readFields(task)
  if (task.kind === 'messages') return readMessages(task.body)
  const outcome = task.kind === 'check' ? checkBody(tools, task) : runTask(tools, task)
  return outcome instanceof Uint8Array ? (move(outcome) as Uint8Array) : outcome
}
