import type { Redis } from 'ioredis'
import { logger } from '../logger.js'
import { GuardUnavailableError } from './errors.js'
import { DUPLICATE_WINDOW_MS, type GuardRecord, type SettlementGuard } from './guard.js'

/** Options of {@link createRedisGuard}. */
export interface RedisGuardOptions {
  /** The instance's shared connection (src/redis.ts): fail-fast, commands bounded by REDIS_TIMEOUT_MS. */
  client: Redis
  /** Prefix of every key, so that services (or tests) sharing a Redis stay apart. */
  prefix?: string
  /**
   * How long a command waits for a connection that is not ready yet (starting, or reconnecting
   * after an outage), in milliseconds (REDIS_TIMEOUT_MS). Default 500.
   */
  readyWaitMs?: number
}

/** Resolves once the client is ready, or after `ms` (the command then fails fast). */
function connected(client: Redis, ms: number): Promise<void> {
  if (client.status === 'ready') return Promise.resolve()
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer)
      client.off('ready', done)
      resolve()
    }
    const timer = setTimeout(done, ms)
    client.once('ready', done)
  })
}

/** Default key prefix of the guard's records. */
export const GUARD_PREFIX = 'payload-tools:guard:'

function parse(raw: string | null): GuardRecord | undefined {
  if (raw === null) return undefined
  try {
    return JSON.parse(raw) as GuardRecord
  } catch {
    return undefined
  }
}

/**
 * `countReplay`: INCR of the payment's replay counter, which lives from the first replay.
 * KEYS[1] the counter, ARGV[1] its lifetime in milliseconds.
 */
const COUNT_REPLAY = `
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return n`

/**
 * `reclaim`: compare-and-set of an `unknown` record. KEYS[1] the key, ARGV[1] the proof it must
 * hold, ARGV[2] the new record, ARGV[3] the window in milliseconds.
 */
const RECLAIM = `
local raw = redis.call('GET', KEYS[1])
if not raw then return 0 end
local ok, held = pcall(cjson.decode, raw)
if not ok or held.state ~= 'unknown' or held.proof ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`

/**
 * Runs a guard command once the connection is ready (waiting at most `readyWaitMs`), failing
 * closed: any failure is a {@link GuardUnavailableError}.
 */
function guardedBy(client: Redis, readyWaitMs: number) {
  return async <T>(what: string, command: () => Promise<T>): Promise<T> => {
    try {
      await connected(client, readyWaitMs)
      return await command()
    } catch (error) {
      // An outage is logged once by the connection (src/redis.ts); a failure with the connection
      // up (a slow or refused command) is logged here.
      if (client.status === 'ready') {
        logger.warn(
          { op: what, err: error instanceof Error ? error.message : String(error) },
          'redis guard command failed',
        )
      }
      throw new GuardUnavailableError()
    }
  }
}

/**
 * The guard shared by every instance, on Redis: a claim is one atomic `SET key value NX PX 120000`
 * (so two instances can never both hold a payment), a later state a plain `SET … PX 120000` of the
 * JSON {@link GuardRecord} (fingerprint, payment key and proof, the payer's keyed hash and the
 * SettleResponse: no input, result or payer address), and the two read-modify-writes (the replay
 * count, taking back an `unknown` record) are Lua scripts, atomic in Redis. Every key expires
 * after {@link DUPLICATE_WINDOW_MS}, or once its payment can no longer be presented, so Redis
 * holds the calls of one such period at most.
 *
 * Fails closed: a command that fails or outlasts the client's command timeout rejects with
 * {@link GuardUnavailableError}, and the gate refuses the call before verify. A connection that is
 * not ready (starting, reconnecting) is waited for at most `readyWaitMs` first, so a command takes
 * at most about twice REDIS_TIMEOUT_MS before it fails.
 *
 * @example
 * const guard = createRedisGuard({ client: createRedis({ url, timeoutMs: 500 }).client })
 * await guard.claim('pay:5f1c…', pendingRecord) // { state: 'claimed' }
 */
export function createRedisGuard(options: RedisGuardOptions): SettlementGuard {
  const { client } = options
  const prefix = options.prefix ?? GUARD_PREFIX
  const guarded = guardedBy(client, options.readyWaitMs ?? 500)
  const window = String(DUPLICATE_WINDOW_MS)

  return {
    async claim(key, record) {
      return guarded('claim', async () => {
        const set = await client.set(
          prefix + key,
          JSON.stringify(record),
          'PX',
          DUPLICATE_WINDOW_MS,
          'NX',
        )
        if (set === 'OK') return { state: 'claimed' as const }
        // Held: read what holds it. If it expired in between, report this very record as
        // pending: the caller answers "in progress" and the client's retry claims it.
        return { state: 'held' as const, record: parse(await client.get(prefix + key)) ?? record }
      })
    },
    async put(key, record, ttlMs = DUPLICATE_WINDOW_MS) {
      await guarded('set', () =>
        client.set(
          prefix + key,
          JSON.stringify(record),
          'PX',
          Math.max(DUPLICATE_WINDOW_MS, Math.ceil(ttlMs)),
        ),
      )
    },
    async peek(key) {
      return guarded('get', async () => parse(await client.get(prefix + key)))
    },
    async release(key) {
      // Only the claimant releases, and its claim (bounded by the paid-call budget, well inside
      // the window) cannot have expired and been taken over in between.
      await guarded('release', () => client.del(prefix + key))
    },
    async countReplay(payment, ttlMs = DUPLICATE_WINDOW_MS) {
      const ttl = String(Math.max(DUPLICATE_WINDOW_MS, Math.ceil(ttlMs)))
      const count = await guarded('replay', () =>
        client.eval(COUNT_REPLAY, 1, `${prefix}replays:${payment}`, ttl),
      )
      return Number(count)
    },
    async reclaim(key, proof, next) {
      const done = await guarded('reclaim', () =>
        client.eval(RECLAIM, 1, prefix + key, proof, JSON.stringify(next), window),
      )
      return Number(done) === 1
    },
  }
}
