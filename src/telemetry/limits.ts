/**
 * Most events held in memory while the store is down: 10,000 (about 3 MB). Events arriving while
 * the buffer is full are dropped, counted in `health().dropped` and logged as counts only.
 */
export const TELEMETRY_BUFFER_LIMIT = 10_000

/** Upper bound on one write (insert or ping) in milliseconds, so a hung database cannot hang a paid call. */
export const WRITE_TIMEOUT_MS = 2_000

/** Upper bound on one read of the rollups for GET /stats, in milliseconds. */
export const READ_TIMEOUT_MS = 5_000

/**
 * Upper bound on one step of a migration, in milliseconds: one statement (the largest is the
 * index on `at` of the existing events) or one backfill batch of 50,000 events. A backfill of many
 * batches takes longer in total (1,000,000 events: about 6 s on SQLite, 18 s on PostgreSQL on a
 * shared 2-core machine); each step restarts the bound. Generous, because a step that always
 * times out would make every start retry the whole migration.
 */
export const MIGRATE_STEP_TIMEOUT_MS = 120_000

/** How long GET /stats figures are served from cache, in milliseconds (published as `cache_seconds`). */
export const STATS_CACHE_MS = 2_000

/** How often the buffer is retried while the store is down, in milliseconds. */
export const RETRY_INTERVAL_MS = 1_000

/** How long `close()` may spend flushing the buffer, in milliseconds. */
export const CLOSE_FLUSH_TIMEOUT_MS = 5_000

/** Rows per insert statement when flushing the buffer. */
export const FLUSH_BATCH_SIZE = 500

/** Most rows the group-commit queue merges into one transaction. */
export const INSERT_BATCH_MAX_ROWS = 1_000

/** Raw events deleted per retention transaction, so pruning never holds the store for long. */
export const PRUNE_BATCH_SIZE = 1_000

/** How often raw events older than `TELEMETRY_RETENTION_DAYS` are pruned, in milliseconds. */
export const PRUNE_INTERVAL_MS = 3_600_000
