import { logger } from '../logger.js'
import { toEventRow } from './event-row.js'
import type { SettlementLedger } from './ledger.js'
import {
  CLOSE_FLUSH_TIMEOUT_MS,
  FLUSH_BATCH_SIZE,
  PRUNE_BATCH_SIZE,
  PRUNE_INTERVAL_MS,
  RETRY_INTERVAL_MS,
  STATS_CACHE_MS,
  TELEMETRY_BUFFER_LIMIT,
  WRITE_TIMEOUT_MS,
} from './limits.js'
import { payerKey, resolveSalt, type SaltSource } from './payer-key.js'
import { buildStats } from './stats.js'
import { createTelemetryStore } from './store.js'
import {
  type EventRow,
  type LedgerDecisionWrite,
  type PaymentEvent,
  type Stats,
  type TelemetryStore,
  TelemetryUnavailableError,
} from './types.js'
import { DAY_MS, HOUR_MS, windowsAt } from './windows.js'

/** Options of {@link createTelemetry}. Durations are milliseconds. */
export interface TelemetryOptions {
  /** `DATABASE_URL`: unset or a file path selects SQLite, `postgres://` selects PostgreSQL. */
  databaseUrl?: string
  /** `TELEMETRY_SALT`; when unset a development salt is generated under `dataDir`. */
  salt?: string
  /** Directory for the default SQLite file and the generated salt; default `./data`. */
  dataDir?: string
  /** Clock in epoch milliseconds for event times, windows and the cache; default `Date.now`. */
  now?: () => number
  /** Buffer bound; default {@link TELEMETRY_BUFFER_LIMIT}. */
  bufferLimit?: number
  /** Stats cache lifetime; default {@link STATS_CACHE_MS}. */
  cacheMs?: number
  /** Retry period while the store is down; default {@link RETRY_INTERVAL_MS}. */
  retryIntervalMs?: number
  /** Bound on one write; default {@link WRITE_TIMEOUT_MS}. */
  writeTimeoutMs?: number
  /**
   * `TELEMETRY_RETENTION_DAYS`: raw events older than this many days are pruned (rollups stay, so
   * no /stats figure changes); undefined keeps every event.
   */
  retentionDays?: number
  /** How often the retention pass runs; default {@link PRUNE_INTERVAL_MS}. */
  pruneIntervalMs?: number
  /** A store to use instead of the one `databaseUrl` selects (tests, tools). */
  store?: TelemetryStore
  /**
   * Told of every insert into the store (the operator metrics): `ok` once committed, `error` when
   * it failed (the rows went to the buffer), and its duration in seconds.
   */
  onWrite?: (write: { result: 'ok' | 'error'; seconds: number }) => void
}

/** Last-known telemetry state, for GET /health; computed without I/O. */
export interface TelemetryHealth {
  /** `degraded` while the store is failing or events wait in the buffer. */
  status: 'ok' | 'degraded'
  backend: 'sqlite' | 'postgres'
  /** Events waiting in memory for the store. */
  buffered: number
  /** Events lost because the buffer was full, since start. */
  dropped: number
  /** `generated`: no `TELEMETRY_SALT`; production must set one, identical on every instance. */
  salt: SaltSource
}

/** Paid-usage telemetry: records payment events and serves the GET /stats aggregates. */
export interface Telemetry {
  /**
   * Records one payment event; never throws or rejects. While the store is up the row is committed
   * before this resolves, bounded by the write timeout; a write that fails or times out puts the
   * row in the buffer and marks the store down. While it is down (until a retry succeeds, at most
   * `retryIntervalMs` after it recovers) rows go straight to the buffer, so a dead database costs
   * a paid call at most one write timeout. Invalid events are logged (field name only) and ignored.
   *
   * @returns true when the event's row was committed with the ledger outcome it carries
   *   (`event.decides`) in one transaction; false when that outcome is still to be written (the
   *   row was buffered or ignored, or the store has no ledger): the caller writes it with
   *   `ledger.decide`, or leaves it to the resolver
   */
  record(event: PaymentEvent): Promise<boolean>
  /**
   * Aggregate figures, served from a cache for `cacheMs`; concurrent callers share one query.
   *
   * @throws {TelemetryUnavailableError} when the store cannot answer or events are still buffered
   */
  stats(): Promise<Stats>
  /** Last-known state, no I/O. */
  health(): TelemetryHealth
  /**
   * The pseudonymous key of a payer address ({@link payerKey} under this telemetry's salt), as
   * the payment events store it: what the duplicate-settlement guard keeps to tell payers apart.
   *
   * @returns 64 lower-case hex characters
   */
  payerKey(address: string): string
  /**
   * Runs one retention pass now (it also runs every `pruneIntervalMs`): deletes raw events older
   * than `retentionDays` whole days, cut at a UTC hour, in batches of {@link PRUNE_BATCH_SIZE}, then
   * the settlement intents decided before the same cut (never one in doubt).
   * Never throws; failures are logged.
   *
   * @returns the number of raw events deleted; 0 when retention is off or the store is down
   */
  prune(): Promise<number>
  /**
   * The write-ahead settlement ledger in the same store (ledger.ts), migrated before its first
   * operation; its operations are never buffered: each throws when the store cannot commit it.
   * Absent when the store has none (test doubles).
   */
  readonly ledger?: SettlementLedger
  /** Stops retrying, flushes the buffer (at most {@link CLOSE_FLUSH_TIMEOUT_MS}), closes the store. */
  close(): Promise<void>
}

/**
 * Starts telemetry: resolves the payer-key salt, picks the backend from `databaseUrl`, runs the
 * migrations (a version-1 store is upgraded and its rollups backfilled here) and starts the buffer
 * retry and retention timers (unref'd). A store that is down at start does not
 * fail startup: telemetry starts degraded and keeps retrying.
 *
 * @example
 * const telemetry = await createTelemetry({ databaseUrl: process.env.DATABASE_URL,
 *   salt: process.env.TELEMETRY_SALT })
 * await telemetry.record({ tool: 'hash', transport: 'http', network: 'eip155:8453',
 *   amount: '1000', outcome: 'verified', payer })
 * const stats = await telemetry.stats() // { paid_calls: 1, … }
 * @throws {Error} when `databaseUrl` has an unsupported scheme, or the generated salt file cannot
 *   be created or read
 */
export async function createTelemetry(options: TelemetryOptions = {}): Promise<Telemetry> {
  const dataDir = options.dataDir ?? './data'
  const now = options.now ?? Date.now
  const bufferLimit = options.bufferLimit ?? TELEMETRY_BUFFER_LIMIT
  const cacheMs = options.cacheMs ?? STATS_CACHE_MS
  const writeTimeoutMs = options.writeTimeoutMs ?? WRITE_TIMEOUT_MS
  const salt = await resolveSalt(options.salt, dataDir)
  const store =
    options.store ?? createTelemetryStore(options.databaseUrl, { dataDir, writeTimeoutMs })
  const { start, ...telemetry } = createTelemetryFacade(store, {
    salt: salt.value,
    saltSource: salt.source,
    now,
    bufferLimit,
    cacheMs,
    writeTimeoutMs,
    retryIntervalMs: options.retryIntervalMs ?? RETRY_INTERVAL_MS,
    retentionDays: options.retentionDays,
    pruneIntervalMs: options.pruneIntervalMs ?? PRUNE_INTERVAL_MS,
    onWrite: options.onWrite,
  })
  await start()
  return telemetry
}

interface FacadeSettings {
  salt: string
  saltSource: SaltSource
  now: () => number
  bufferLimit: number
  cacheMs: number
  writeTimeoutMs: number
  retryIntervalMs: number
  retentionDays: number | undefined
  pruneIntervalMs: number
  onWrite: TelemetryOptions['onWrite']
}

/** Resolves when `promise` settles or after `ms`, whichever comes first; never rejects. */
function within(promise: Promise<unknown>, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms)
    promise.then(
      () => {
        clearTimeout(timer)
        resolve()
      },
      () => {
        clearTimeout(timer)
        resolve()
      },
    )
  })
}

/** Error fields safe to log: a code and a short message, never rows or parameters. */
function errorFields(error: unknown): { errCode: string; errMessage: string } {
  const e = error as { code?: unknown; name?: unknown; message?: unknown }
  return {
    errCode: typeof e?.code === 'string' ? e.code : String(e?.name ?? 'Error'),
    errMessage: String(e?.message ?? error).slice(0, 200),
  }
}

function createTelemetryFacade(store: TelemetryStore, s: FacadeSettings) {
  const buffer: EventRow[] = []
  let ready = false
  let failing = false
  let closed = false
  let dropped = 0
  let droppedLogged = 0
  let flushing: Promise<void> | undefined
  let closing: Promise<void> | undefined
  let cache: { value: Stats; expiresAt: number } | undefined
  let computing: Promise<Stats> | undefined
  let timer: NodeJS.Timeout | undefined
  let pruneTimer: NodeJS.Timeout | undefined
  let pruning: Promise<number> | undefined

  /** `store.insert`, timed for `s.onWrite`. */
  async function insert(
    rows: readonly EventRow[],
    decisions?: readonly LedgerDecisionWrite[],
  ): Promise<void> {
    if (!s.onWrite) return store.insert(rows, decisions)
    const started = performance.now()
    const seconds = () => (performance.now() - started) / 1000
    try {
      await store.insert(rows, decisions)
    } catch (error) {
      s.onWrite({ result: 'error', seconds: seconds() })
      throw error
    }
    s.onWrite({ result: 'ok', seconds: seconds() })
  }

  function markDown(error: unknown): void {
    if (!failing) {
      logger.warn(
        { backend: store.backend, buffered: buffer.length, ...errorFields(error) },
        'telemetry store unavailable; buffering events',
      )
    }
    failing = true
  }

  function markUp(): void {
    if (failing) logger.info({ backend: store.backend }, 'telemetry store available again')
    failing = false
  }

  function logDrops(): void {
    if (dropped === droppedLogged) return
    logger.error(
      { dropped: dropped - droppedLogged, droppedTotal: dropped, bufferLimit: s.bufferLimit },
      'telemetry buffer full; events dropped',
    )
    droppedLogged = dropped
  }

  function enqueue(row: EventRow): void {
    // Dropping the newest keeps the buffer a plain queue that only the flush shortens.
    if (buffer.length >= s.bufferLimit) dropped++
    else buffer.push(row)
  }

  async function ensureReady(): Promise<void> {
    if (ready) return
    await store.migrate()
    ready = true
  }

  /** Writes the buffer oldest first in batches; one drain at a time. */
  function flush(): Promise<void> {
    flushing ??= (async () => {
      try {
        await ensureReady()
        if (buffer.length === 0) await store.ping()
        while (buffer.length > 0) {
          const batch = buffer.slice(0, FLUSH_BATCH_SIZE)
          await insert(batch)
          // Only this drain removes rows and enqueue only appends, so the batch is the head.
          buffer.splice(0, batch.length)
        }
        markUp()
      } catch (error) {
        markDown(error)
      }
    })().finally(() => {
      flushing = undefined
    })
    return flushing
  }

  async function start(): Promise<void> {
    try {
      await ensureReady()
    } catch (error) {
      markDown(error)
    }
    timer = setInterval(() => {
      logDrops()
      if (!closed && (failing || !ready || buffer.length > 0)) void flush()
    }, s.retryIntervalMs)
    timer.unref()
    if (s.retentionDays !== undefined) {
      pruneTimer = setInterval(() => void prune(), s.pruneIntervalMs)
      pruneTimer.unref()
      void prune()
    }
  }

  /** Deletes old raw events batch by batch; one pass at a time, stopping at close or a failure. */
  function prune(): Promise<number> {
    const days = s.retentionDays
    if (days === undefined || closed) return Promise.resolve(0)
    pruning ??= (async () => {
      let deleted = 0
      try {
        // Cut at a whole UTC hour: `stats:check` compares the hourly rollups of every hour after
        // the cut with the raw events, so no hour may be half pruned.
        const before = Math.floor((s.now() - days * DAY_MS) / HOUR_MS) * HOUR_MS
        while (!closed && ready && !failing) {
          const n = await store.prune(before, PRUNE_BATCH_SIZE)
          deleted += n
          if (n < PRUNE_BATCH_SIZE) break
        }
        if (deleted > 0) logger.info({ deleted, before }, 'telemetry: raw events pruned')
        // Decided settlement intents follow the same retention; those in doubt are kept.
        let intents = 0
        while (store.ledger && !closed && ready && !failing) {
          const n = await store.ledger.prune(before, PRUNE_BATCH_SIZE)
          intents += n
          if (n < PRUNE_BATCH_SIZE) break
        }
        if (intents > 0) logger.info({ intents, before }, 'telemetry: settlement intents pruned')
      } catch (error) {
        logger.warn(errorFields(error), 'telemetry: pruning raw events failed')
      }
      return deleted
    })().finally(() => {
      pruning = undefined
    })
    return pruning
  }

  async function record(event: PaymentEvent): Promise<boolean> {
    try {
      const result = toEventRow(event, s.salt, s.now())
      if (!result.ok) {
        logger.warn({ field: result.field }, 'telemetry: invalid payment event ignored')
        return false
      }
      const row = result.row
      if (closed) {
        dropped++
        logDrops()
        return false
      }
      if (failing || !ready) {
        enqueue(row)
        return false
      }
      if (buffer.length > 0) {
        // Store up but a backlog remains: queue behind it so the flush keeps order.
        enqueue(row)
        await within(flush(), s.writeTimeoutMs)
        return false
      }
      const decides = event.decides && store.ledger ? [event.decides] : undefined
      try {
        await insert([row], decides)
        markUp()
        return decides !== undefined
      } catch (error) {
        markDown(error)
        enqueue(row)
        return false
      }
    } catch (error) {
      logger.error(errorFields(error), 'telemetry: record failed')
      return false
    }
  }

  function stats(): Promise<Stats> {
    if (closed) return Promise.reject(new TelemetryUnavailableError('telemetry is closed'))
    if (failing || !ready || buffer.length > 0) {
      return Promise.reject(new TelemetryUnavailableError())
    }
    const at = s.now()
    if (cache && at < cache.expiresAt) return Promise.resolve(cache.value)
    computing ??= (async () => {
      const windows = windowsAt(at)
      try {
        const value = buildStats(await store.read(windows), windows, s.cacheMs / 1000)
        cache = { value, expiresAt: at + s.cacheMs }
        return value
      } catch (error) {
        markDown(error)
        throw new TelemetryUnavailableError(undefined, { cause: error })
      }
    })().finally(() => {
      computing = undefined
    })
    return computing
  }

  function health(): TelemetryHealth {
    return {
      status: failing || !ready || buffer.length > 0 ? 'degraded' : 'ok',
      backend: store.backend,
      buffered: buffer.length,
      dropped,
      salt: s.saltSource,
    }
  }

  function close(): Promise<void> {
    closing ??= (async () => {
      closed = true
      clearInterval(timer)
      clearInterval(pruneTimer)
      if (pruning) await within(pruning, CLOSE_FLUSH_TIMEOUT_MS)
      if (buffer.length > 0) await within(flush(), CLOSE_FLUSH_TIMEOUT_MS)
      else if (flushing) await within(flushing, CLOSE_FLUSH_TIMEOUT_MS)
      if (buffer.length > 0) {
        logger.error({ lost: buffer.length }, 'telemetry: buffered events lost at close')
      }
      logDrops()
      try {
        await store.close()
      } catch (error) {
        logger.warn(errorFields(error), 'telemetry: store close failed')
      }
    })()
    return closing
  }

  const inner = store.ledger
  // A paid call waits for these three: each is bounded by the write timeout, as the paid-call
  // budget counts it (src/payment/budget.ts), whatever the store or its migration does.
  const bounded = <T>(write: () => Promise<T>): Promise<T> =>
    new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`settlement ledger: no answer within ${s.writeTimeoutMs} ms`)),
        s.writeTimeoutMs,
      )
      write().then(
        (value) => {
          clearTimeout(timer)
          resolve(value)
        },
        (error: unknown) => {
          clearTimeout(timer)
          reject(error)
        },
      )
    })
  const ledger: SettlementLedger | undefined = inner && {
    intend: (intent, holdUntil) =>
      bounded(async () => {
        await ensureReady()
        return inner.intend(intent, holdUntil)
      }),
    decide: (key, decision) =>
      bounded(async () => {
        await ensureReady()
        return inner.decide(key, decision)
      }),
    forget: (key) =>
      bounded(async () => {
        await ensureReady()
        return inner.forget(key)
      }),
    claim: async (claim) => {
      await ensureReady()
      return inner.claim(claim)
    },
    unresolved: async (before) => {
      await ensureReady()
      return inner.unresolved(before)
    },
    get: async (key) => {
      await ensureReady()
      return inner.get(key)
    },
    prune: async (before, limit) => {
      await ensureReady()
      return inner.prune(before, limit)
    },
  }

  return {
    start,
    record,
    ...(ledger ? { ledger } : {}),
    stats,
    health,
    prune,
    close,
    payerKey: (address: string) => payerKey(s.salt, address),
  }
}
