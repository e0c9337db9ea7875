import { parentPort, workerData } from 'node:worker_threads'
import { createSqliteCore } from './sqlite-db.js'
import type { WorkerData, WorkerReply, WorkerRequest } from './sqlite-protocol.js'

// Entry point of the SQLite store's worker thread (see sqlite-store.ts): it owns the one
// better-sqlite3 connection and runs each request to completion, in arrival order.

const port = parentPort
if (!port) throw new Error('sqlite-worker.ts must run in a worker thread')
const data = workerData as WorkerData
const core = createSqliteCore(data.path, {
  ...(data.backfillBatchSize ? { backfillBatchSize: data.backfillBatchSize } : {}),
})

function run(request: WorkerRequest): unknown {
  switch (request.op) {
    case 'migrate':
      return core.migrate(() => port?.postMessage({ id: request.id, progress: true }))
    case 'insert':
      return core.insert(request.rows)
    case 'read':
      return core.read(request.windows)
    case 'prune':
      return core.prune(request.before, request.limit)
    case 'ping':
      return core.ping()
    case 'close':
      return core.close()
    case 'ledger.intend':
      return core.ledger.intend(request.intent, request.holdUntil)
    case 'ledger.decide':
      return core.ledger.decide(request.key, request.decision)
    case 'ledger.forget':
      return core.ledger.forget(request.key)
    case 'ledger.claim':
      return core.ledger.claim(request.claim)
    case 'ledger.unresolved':
      return core.ledger.unresolved(request.before)
    case 'ledger.get':
      return core.ledger.get(request.key)
    case 'ledger.prune':
      return core.ledger.prune(request.before, request.limit)
  }
}

/** The writes of a paid call and of the event queue: consecutive ones share one commit. */
const GROUPED = new Set<WorkerRequest['op']>([
  'insert',
  'ledger.intend',
  'ledger.decide',
  'ledger.forget',
])

function failure(id: number, error: unknown): WorkerReply {
  const e = error as { code?: unknown; message?: unknown }
  return {
    id,
    ok: false,
    error: {
      ...(typeof e?.code === 'string' ? { code: e.code } : {}),
      message: String(e?.message ?? error).slice(0, 500),
    },
  }
}

function answer(request: WorkerRequest): void {
  let reply: WorkerReply
  try {
    reply = { id: request.id, ok: true, value: run(request) }
  } catch (error) {
    reply = failure(request.id, error)
  }
  port?.postMessage(reply)
  if (request.op === 'close') port?.close()
}

/** Answers consecutive writes from one transaction: one fsync instead of one each. */
function answerGroup(requests: WorkerRequest[]): void {
  let replies: WorkerReply[]
  try {
    replies = core.group(requests.map((request) => () => run(request))).map((result, i) => {
      const id = (requests[i] as WorkerRequest).id
      return result.ok ? { id, ok: true, value: result.value } : failure(id, result.error)
    })
  } catch (error) {
    replies = requests.map((request) => failure(request.id, error))
  }
  for (const reply of replies) port?.postMessage(reply)
}

// Requests that arrive while a commit waits on the disk are answered together at the next turn:
// the group commit of a busy instance, in arrival order.
let pending: WorkerRequest[] = []

function drain(): void {
  const batch = pending
  pending = []
  for (let i = 0; i < batch.length; ) {
    let end = i
    while (end < batch.length && GROUPED.has((batch[end] as WorkerRequest).op)) end++
    if (end - i > 1) {
      answerGroup(batch.slice(i, end))
      i = end
    } else {
      answer(batch[i] as WorkerRequest)
      i++
    }
  }
}

port.on('message', (request: WorkerRequest) => {
  pending.push(request)
  if (pending.length === 1) setImmediate(drain)
})
