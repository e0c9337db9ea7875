/**
 * Paid-usage telemetry: payment events and their rollups in SQLite or PostgreSQL, the GET /stats
 * figures read from the rollups, and the reconciliation behind `npm run stats:check`.
 * Imports nothing of ours except the logger.
 */

export { settlementEventId } from './event-row.js'
export {
  LEDGER_TABLE,
  type LedgerDecision,
  type LedgerEntry,
  type LedgerIntent,
  type LedgerOutcome,
  type SettlementLedger,
} from './ledger.js'
export {
  CLOSE_FLUSH_TIMEOUT_MS,
  PRUNE_BATCH_SIZE,
  PRUNE_INTERVAL_MS,
  READ_TIMEOUT_MS,
  RETRY_INTERVAL_MS,
  STATS_CACHE_MS,
  TELEMETRY_BUFFER_LIMIT,
  WRITE_TIMEOUT_MS,
} from './limits.js'
export { formatUsdc } from './money.js'
export { payerKey, resolveSalt, type SaltSource } from './payer-key.js'
export {
  createTelemetryStore,
  type StoreLocation,
  storeLocation,
  type TelemetryStoreOptions,
} from './store.js'
export {
  createTelemetry,
  type Telemetry,
  type TelemetryHealth,
  type TelemetryOptions,
} from './telemetry.js'
export {
  type Money,
  type Outcome,
  type PaymentEvent,
  type Scheme,
  type Stats,
  type TelemetryStore,
  TelemetryUnavailableError,
  type Transport,
} from './types.js'
