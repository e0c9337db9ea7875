import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'
import { logger } from '../logger.js'
import type { LedgerEntry } from './ledger.js'
import {
  INSERT_BATCH_MAX_ROWS,
  MIGRATE_STEP_TIMEOUT_MS,
  READ_TIMEOUT_MS,
  WRITE_TIMEOUT_MS,
} from './limits.js'
import {
  GROUPED_OPS,
  type WorkerBatchReply,
  type WorkerCall,
  type WorkerData,
  type WorkerReply,
  type WorkerRequest,
} from './sqlite-protocol.js'
import type { Rollups, TelemetryStore } from './types.js'
import { createWriteQueue } from './write-queue.js'

/** Options of the SQLite backend; durations in milliseconds. */
export interface SqliteStoreOptions {
  /** Bound on one insert (from the call to its commit) or ping; default {@link WRITE_TIMEOUT_MS}. */
  writeTimeoutMs?: number
  /** Bound on one read; default {@link READ_TIMEOUT_MS}. */
  readTimeoutMs?: number
  /** Raw events per backfill step when a migration builds the rollups; default 50,000. */
  backfillBatchSize?: number
}

/** The SQLite backend, with a handle on its worker thread for crash drills and tests. */
export interface SqliteTelemetryStore extends TelemetryStore {
  readonly backend: 'sqlite'
  /**
   * Stops the worker thread at once, as a crash would: requests in flight fail (the facade
   * buffers their events); the next operation starts a new thread.
   */
  terminateWorker(): Promise<void>
}

/** Raised to callers when the worker thread dies or cannot start. */
export class SqliteWorkerExitError extends Error {
  override readonly name = 'SqliteWorkerExitError'
  readonly code = 'SQLITE_WORKER_EXIT'
}

interface Pending {
  resolve: (value: unknown) => void
  reject: (error: unknown) => void
  timer: NodeJS.Timeout
}

/**
 * Starts the worker. Compiled code (`dist/`) loads `sqlite-worker.js` beside this file. Sources
 * run through tsx (`npm run dev`, tests, scripts), whose loader a worker does not inherit, so the
 * worker first registers tsx's ESM hooks (tsx is a dev dependency, present wherever `.ts` runs).
 */
function spawnWorker(data: WorkerData): Worker {
  if (import.meta.url.endsWith('.js')) {
    return new Worker(new URL('./sqlite-worker.js', import.meta.url), { workerData: data })
  }
  // The ESM entry of tsx's API, as its exports map names it (require.resolve gives the CJS one).
  const require = createRequire(import.meta.url)
  const manifest = require.resolve('tsx/package.json')
  const { exports } = require(manifest) as {
    exports: Record<string, { import: { default: string } }>
  }
  const tsx = new URL(
    exports['./esm/api']?.import.default ?? './dist/esm/api/index.mjs',
    pathToFileURL(manifest),
  ).href
  const entry = new URL('./sqlite-worker.ts', import.meta.url).href
  const bootstrap = `import(${JSON.stringify(tsx)})
    .then((m) => (m.register ?? m.default.register)())
    .then(() => import(${JSON.stringify(entry)}))`
  return new Worker(bootstrap, { eval: true, workerData: data })
}

/**
 * The embedded SQLite backend for a single instance. better-sqlite3 is synchronous, so the
 * database lives in its own worker thread and the serving thread only exchanges messages with it:
 * no SQLite call ever runs on the event loop.
 *
 * Writes are group-committed: the events of concurrent `insert` calls are merged by a queue, and
 * every write (events, ledger intents and outcomes) that arrives while a transaction commits is
 * posted with the others as one batch and written by the next transaction (one message and one
 * fsync for all of them, synchronous=FULL in WAL mode, each write in a savepoint of its own so
 * that one refused for its own data fails alone). Each write resolves only after the transaction
 * holding it committed.
 *
 * The store is down when an operation fails: the worker died (crash, out of memory) or cannot
 * start, the disk is full or failing, the file is locked by another process beyond the busy
 * timeout, or the worker did not answer within the operation's bound (a hung disk). A dead worker
 * is replaced by the next operation; the facade retries every second.
 *
 * @example
 * const store = createSqliteStore('./data/telemetry.sqlite')
 * await store.migrate()
 * @param path - database file path, or `:memory:`
 */
export function createSqliteStore(
  path: string,
  options: SqliteStoreOptions = {},
): SqliteTelemetryStore {
  const writeTimeoutMs = options.writeTimeoutMs ?? WRITE_TIMEOUT_MS
  const readTimeoutMs = options.readTimeoutMs ?? READ_TIMEOUT_MS
  const pending = new Map<number, Pending>()
  let worker: Worker | undefined
  let nextId = 1
  // Group commit across callers: writes gathered while a batch commits go as the next batch (one
  // message, one transaction), so a busy instance pays one commit for many calls' writes.
  let outbox: WorkerRequest[] = []
  let batchInFlight = false

  function postWrites(): void {
    if (batchInFlight || outbox.length === 0) return
    const calls = outbox
    outbox = []
    batchInFlight = true
    ensureWorker().postMessage({ op: 'batch', calls })
  }

  function failAll(error: Error): void {
    outbox = []
    batchInFlight = false
    for (const [id, p] of pending) {
      clearTimeout(p.timer)
      pending.delete(id)
      p.reject(error)
    }
  }

  function settle(reply: WorkerReply): void {
    const p = pending.get(reply.id)
    if (!p) return // answered after its deadline; the caller has moved on
    if ('progress' in reply) {
      p.timer.refresh()
      return
    }
    clearTimeout(p.timer)
    pending.delete(reply.id)
    if (pending.size === 0) worker?.unref()
    if (reply.ok) p.resolve(reply.value)
    else p.reject(Object.assign(new Error(reply.error.message), { code: reply.error.code }))
  }

  function ensureWorker(): Worker {
    if (worker) return worker
    const started = spawnWorker({
      path,
      ...(options.backfillBatchSize ? { backfillBatchSize: options.backfillBatchSize } : {}),
    })
    started.on('message', (message: WorkerReply | WorkerBatchReply) => {
      if (!('batch' in message)) return settle(message)
      batchInFlight = false
      for (const reply of message.batch) settle(reply)
      postWrites()
    })
    started.on('error', (error) => {
      logger.error(
        { errMessage: String(error?.message ?? error).slice(0, 200) },
        'telemetry: sqlite worker failed',
      )
    })
    started.on('exit', (code) => {
      if (worker === started) worker = undefined
      failAll(new SqliteWorkerExitError(`sqlite worker exited with code ${code}`))
    })
    // Idle, the thread must not keep the process alive; with requests pending it must.
    started.unref()
    worker = started
    return started
  }

  function request<T>(message: WorkerCall, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const id = nextId++
      const target = ensureWorker()
      const timer = setTimeout(() => {
        if (!pending.delete(id)) return
        // Not sent yet: withdrawn, so that it never commits after its caller gave up.
        const queued = outbox.findIndex((call) => call.id === id)
        if (queued >= 0) outbox.splice(queued, 1)
        if (pending.size === 0) worker?.unref()
        reject(
          Object.assign(new Error(`sqlite ${message.op} did not answer within ${timeoutMs} ms`), {
            code: 'SQLITE_WORKER_TIMEOUT',
          }),
        )
      }, timeoutMs)
      pending.set(id, {
        resolve: resolve as (value: unknown) => void,
        reject,
        timer,
      })
      target.ref()
      const call = { ...message, id } as WorkerRequest
      if (!GROUPED_OPS.has(call.op)) return target.postMessage(call)
      outbox.push(call)
      postWrites()
    })
  }

  const insert = createWriteQueue(
    (rows, decisions) =>
      request<number>({ op: 'insert', rows, decisions }, writeTimeoutMs).then(() => undefined),
    { timeoutMs: writeTimeoutMs, maxBatchRows: INSERT_BATCH_MAX_ROWS },
  )

  async function terminateWorker(): Promise<void> {
    await worker?.terminate()
  }

  return {
    backend: 'sqlite',
    migrate: () => request<void>({ op: 'migrate' }, MIGRATE_STEP_TIMEOUT_MS),
    insert,
    read: (windows) => request<Rollups>({ op: 'read', windows }, readTimeoutMs),
    prune: (before, limit) => request<number>({ op: 'prune', before, limit }, writeTimeoutMs),
    ping: () => request<void>({ op: 'ping' }, writeTimeoutMs),
    ledger: {
      intend: (intent, holdUntil) =>
        request<void>({ op: 'ledger.intend', intent, holdUntil }, writeTimeoutMs),
      decide: (key, decision) =>
        request<boolean>({ op: 'ledger.decide', key, decision }, writeTimeoutMs),
      forget: (key) => request<void>({ op: 'ledger.forget', key }, writeTimeoutMs),
      claim: (claim) => request<LedgerEntry[]>({ op: 'ledger.claim', claim }, writeTimeoutMs),
      unresolved: (before) => request<number>({ op: 'ledger.unresolved', before }, readTimeoutMs),
      get: (key) => request<LedgerEntry | undefined>({ op: 'ledger.get', key }, readTimeoutMs),
      prune: (before, limit) =>
        request<number>({ op: 'ledger.prune', before, limit }, writeTimeoutMs),
    },
    async close() {
      const current = worker
      if (!current) return
      try {
        await request<void>({ op: 'close' }, writeTimeoutMs)
      } catch {
        // A worker that cannot close its handle cleanly is terminated all the same.
      }
      await current.terminate()
    },
    terminateWorker,
  }
}
