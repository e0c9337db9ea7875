import { parentPort, workerData } from 'node:worker_threads'
import { createSqliteCore } from './sqlite-db.js'
import type { WorkerBatch, WorkerData, WorkerReply, WorkerRequest } from './sqlite-protocol.js'

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
      return core.insert(request.rows, request.decisions)
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

/** Runs consecutive writes in one transaction: one fsync instead of one each. */
function runGroup(requests: WorkerRequest[]): WorkerReply[] {
  if (requests.length === 1) {
    const [request] = requests as [WorkerRequest]
    try {
      return [{ id: request.id, ok: true, value: run(request) }]
    } catch (error) {
      return [failure(request.id, error)]
    }
  }
  let replies: WorkerReply[]
  try {
    replies = core.group(requests.map((request) => () => run(request))).map((result, i) => {
      const id = (requests[i] as WorkerRequest).id
      return result.ok ? { id, ok: true, value: result.value } : failure(id, result.error)
    })
  } catch (error) {
    replies = requests.map((request) => failure(request.id, error))
  }
  return replies
}

// Each message in arrival order: the serving thread gathers its writes into batches while a
// transaction commits (sqlite-store.ts), and a batch is one transaction answered in one message.
port.on('message', (item: WorkerRequest | WorkerBatch) => {
  if (item.op === 'batch') port?.postMessage({ batch: runGroup(item.calls) })
  else answer(item)
})
