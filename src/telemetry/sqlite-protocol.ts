import type { LedgerClaim, LedgerDecision, LedgerIntent } from './ledger.js'
import type { EventRow, LedgerDecisionWrite } from './types.js'
import type { Windows } from './windows.js'

/** One operation the serving thread asks of the SQLite worker thread, with its arguments. */
export type WorkerCall =
  | { op: 'migrate' }
  | { op: 'insert'; rows: readonly EventRow[]; decisions: readonly LedgerDecisionWrite[] }
  | { op: 'read'; windows: Windows }
  | { op: 'prune'; before: number; limit: number }
  | { op: 'ping' }
  | { op: 'close' }
  | { op: 'ledger.intend'; intent: LedgerIntent; holdUntil: number }
  | { op: 'ledger.decide'; key: string; decision: LedgerDecision }
  | { op: 'ledger.forget'; key: string }
  | { op: 'ledger.claim'; claim: LedgerClaim }
  | { op: 'ledger.unresolved'; before: number }
  | { op: 'ledger.get'; key: string }
  | { op: 'ledger.prune'; before: number; limit: number }

/** A {@link WorkerCall} as posted; `id` pairs it with its reply. */
export type WorkerRequest = WorkerCall & { id: number }

/** The writes the serving thread gathers into {@link WorkerBatch}es (group commit). */
export const GROUPED_OPS: ReadonlySet<WorkerCall['op']> = new Set([
  'insert',
  'ledger.intend',
  'ledger.decide',
  'ledger.forget',
])

/**
 * Writes posted together, committed in one transaction and answered in one
 * {@link WorkerBatchReply}: those that the serving thread gathered while the previous batch
 * committed.
 */
export interface WorkerBatch {
  op: 'batch'
  calls: WorkerRequest[]
}

/** The answers of a {@link WorkerBatch}, in its order. */
export interface WorkerBatchReply {
  batch: WorkerReply[]
}

/**
 * The worker's answer. `progress` says a long operation (a migration's backfill) is still moving,
 * so the caller's inactivity deadline restarts.
 */
export type WorkerReply =
  | { id: number; progress: true }
  | { id: number; ok: true; value: unknown }
  | { id: number; ok: false; error: { code?: string; message: string } }

/** `workerData` of the SQLite worker. */
export interface WorkerData {
  /** Database file path, or `:memory:`. */
  path: string
  /** Raw events per backfill step of a migration; default 50,000. */
  backfillBatchSize?: number
}
