import type { EventRow, LedgerDecisionWrite } from './types.js'

/** Options of {@link createWriteQueue}. */
export interface WriteQueueOptions {
  /** Bound on one caller's wait, from enqueue to commit, in milliseconds. */
  timeoutMs: number
  /** Most rows in one transaction; a single larger call still goes as one. */
  maxBatchRows: number
  /** Transactions in flight at once; default 1. */
  concurrency?: number
}

/** Thrown to a caller whose rows were not committed within the queue's timeout. */
export class WriteTimeoutError extends Error {
  override readonly name = 'WriteTimeoutError'
  readonly code = 'WRITE_TIMEOUT'
}

/** Commits rows and ledger outcomes in one transaction, rejecting on any failure. */
export type TransactionWrite = (
  rows: readonly EventRow[],
  decisions: readonly LedgerDecisionWrite[],
) => Promise<void>

interface Entry {
  rows: readonly EventRow[]
  decisions: readonly LedgerDecisionWrite[]
  resolve: () => void
  reject: (error: unknown) => void
  timer: NodeJS.Timeout
  sent: boolean
  done: boolean
}

const NONE: readonly LedgerDecisionWrite[] = []

/**
 * Group commit: concurrent `insert` calls are merged into one transaction, so one commit (one
 * fsync) covers every event that arrived in the same turn or while the previous transaction ran. Each caller resolves
 * only once the transaction holding its rows (and the ledger outcomes it carries) committed, so
 * durability before the answer is kept.
 *
 * A caller waits at most `timeoutMs`; rows still queued at that point are withdrawn, rows already
 * sent may still commit (stores ignore known ids, so a later retry cannot count them twice).
 * When a merged transaction fails, every caller in it gets the error.
 *
 * @example
 * const insert = createWriteQueue((rows, decisions) => store.insertNow(rows, decisions), { timeoutMs: 2000, maxBatchRows: 500 })
 * await insert([row]) // committed
 * @param write - commits the rows and outcomes in one transaction, rejecting on any failure
 */
export function createWriteQueue(
  write: TransactionWrite,
  options: WriteQueueOptions,
): (rows: readonly EventRow[], decisions?: readonly LedgerDecisionWrite[]) => Promise<void> {
  const concurrency = options.concurrency ?? 1
  const queue: Entry[] = []
  let inFlight = 0
  let scheduled = false

  function finish(entry: Entry, error: unknown): void {
    if (entry.done) return
    entry.done = true
    clearTimeout(entry.timer)
    if (error === undefined) entry.resolve()
    else entry.reject(error)
  }

  function pump(): void {
    while (inFlight < concurrency && queue.length > 0) {
      const batch: Entry[] = []
      let size = 0
      while (queue.length > 0) {
        const next = queue[0] as Entry
        if (batch.length > 0 && size + next.rows.length > options.maxBatchRows) break
        queue.shift()
        next.sent = true
        batch.push(next)
        size += next.rows.length
      }
      inFlight++
      const one = batch.length === 1 ? (batch[0] as Entry) : undefined
      const rows = one ? one.rows : batch.flatMap((e) => e.rows)
      const decisions = one ? one.decisions : batch.flatMap((e) => e.decisions)
      write(rows, decisions)
        .then(
          () => {
            for (const entry of batch) finish(entry, undefined)
          },
          (error: unknown) => {
            const cause = error ?? new Error('telemetry write failed')
            for (const entry of batch) finish(entry, cause)
          },
        )
        .finally(() => {
          inFlight--
          // After a macrotask turn, so that the callers this commit released (and any others
          // whose continuations are queued) enqueue their next rows first and share the next
          // transaction instead of one of them starting it alone.
          setImmediate(pump)
        })
    }
  }

  return (rows, decisions = NONE) => {
    if (rows.length === 0 && decisions.length === 0) return Promise.resolve()
    return new Promise<void>((resolve, reject) => {
      const entry: Entry = {
        rows,
        decisions,
        resolve,
        reject,
        sent: false,
        done: false,
        timer: setTimeout(() => {
          if (!entry.sent) queue.splice(queue.indexOf(entry), 1)
          finish(
            entry,
            new WriteTimeoutError(`telemetry write not committed within ${options.timeoutMs} ms`),
          )
        }, options.timeoutMs),
      }
      queue.push(entry)
      // At the end of this turn: the rows its caller writes in the same turn (a paid call's
      // `verified` and outcome events) share the transaction.
      if (!scheduled) {
        scheduled = true
        queueMicrotask(() => {
          scheduled = false
          pump()
        })
      }
    })
  }
}
