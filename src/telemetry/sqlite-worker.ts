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

port.on('message', (request: WorkerRequest) => {
  let reply: WorkerReply
  try {
    reply = { id: request.id, ok: true, value: run(request) }
  } catch (error) {
    const e = error as { code?: unknown; message?: unknown }
    reply = {
      id: request.id,
      ok: false,
      error: {
        ...(typeof e?.code === 'string' ? { code: e.code } : {}),
        message: String(e?.message ?? error).slice(0, 500),
      },
    }
  }
  port.postMessage(reply)
  if (request.op === 'close') port.close()
})
