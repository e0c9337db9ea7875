/**
 * The write-ahead settlement ledger, kept in the telemetry store beside the events: one row per
 * payment sent to settle, written (and committed) before the settle request leaves, and its
 * outcome written after. A SIGKILL between the two leaves an intent without an outcome, which the
 * settlement resolver decides against the chain at the next start.
 *
 * Table `settlement_intents` (schema version 3), keyed by `payment_key`:
 * - `payment_key`: the guard key of the payment (`PaymentIdentity.key`, already a hash of what the
 *   payer signed; never the payload);
 * - `network` (CAIP-2), `amount` (atomic USDC, 64-bit integer), `tool` (tool id), `transport`
 *   (`http` | `mcp`): what the telemetry event of its outcome says;
 * - `created_at`, `expires_at`, `decided_at`, `claimed_until`: epoch milliseconds. `expires_at` is
 *   when the payment could no longer land (its `validBefore`, or its transaction's lifetime);
 *   `claimed_until` is how long one party (the call settling it, or one resolver) holds it;
 * - `question`: the settlement question as JSON (network, asset, payTo, amount, nonce or payer
 *   signature digest; no payer address, no payload), or null when none could be built;
 * - `outcome`: `settled` (the facilitator settled it), `failed` (the facilitator refused it: not
 *   charged), `landed` (the chain shows the transfer), `not_landed` (the chain shows it never can:
 *   not charged), or null while in doubt; `tx`: the transaction of `settled` and `landed`.
 *
 * The outcome is written once: {@link SettlementLedger.decide} only moves it from null, and its
 * answer says whether this caller did, so exactly one party counts it in telemetry.
 */

/** Table name of the ledger (both backends). */
export const LEDGER_TABLE = 'settlement_intents'

/** What became of an intent; null in {@link LedgerEntry.outcome} while in doubt. */
export type LedgerOutcome = 'settled' | 'failed' | 'landed' | 'not_landed'

/** Every {@link LedgerOutcome}, for the table's CHECK constraint. */
export const LEDGER_OUTCOMES: readonly LedgerOutcome[] = [
  'settled',
  'failed',
  'landed',
  'not_landed',
]

/**
 * One intent to settle, as written before the settle request.
 *
 * @example
 * { key: 'pay:5f1c…', network: 'eip155:8453', amount: '1000', tool: 'hash', transport: 'http',
 *   createdAt: 1764251000000, expiresAt: 1764251120000, question: '{"network":"eip155:8453",…}' }
 */
export interface LedgerIntent {
  /** The payment's guard key (a hash), at most 200 characters. */
  key: string
  /** CAIP-2 network of the rail. */
  network: string
  /** Atomic USDC units, decimal string of a non-negative 64-bit integer. */
  amount: string
  /** Tool id. */
  tool: string
  transport: 'http' | 'mcp'
  /** Epoch milliseconds. */
  createdAt: number
  /** Epoch milliseconds after which the payment can no longer land. */
  expiresAt: number
  /** The `SettlementQuestion` as JSON, or null. */
  question: string | null
}

/** An intent as stored, with its outcome once decided. */
export interface LedgerEntry extends LedgerIntent {
  outcome: LedgerOutcome | null
  /** Transaction of a `settled` or `landed` intent. */
  transaction: string | null
  /** Epoch milliseconds, once decided. */
  decidedAt: number | null
}

/** An outcome to write: {@link SettlementLedger.decide}. */
export interface LedgerDecision {
  outcome: LedgerOutcome
  transaction?: string
  /** Epoch milliseconds. */
  at: number
}

/** What {@link SettlementLedger.claim} takes: intents still in doubt that nobody holds. */
export interface LedgerClaim {
  /** Epoch milliseconds: intents held until before this are free. */
  now: number
  /** How long the claimed intents are held, in milliseconds. */
  holdMs: number
  /** Only intents on these CAIP-2 networks (those a judge covers). */
  networks: readonly string[]
  /** At most this many. */
  limit: number
}

/**
 * The ledger's operations; every one is committed (durable) when it resolves, bounded by the
 * store's write timeout, and throws on a storage failure.
 */
export interface SettlementLedger {
  /**
   * Writes an intent, held by the caller until `holdUntil` (epoch ms; no resolver claims it
   * before). An intent still in doubt under the same key keeps its row, creation time and
   * question (asked as of the first presentation) and is held again (a retry of the same
   * payment); a `not_landed` one starts over; a decided one is left alone.
   */
  intend(intent: LedgerIntent, holdUntil: number): Promise<void>
  /**
   * Writes the outcome of an intent still in doubt.
   *
   * @returns true when this call decided it; false when it was decided already (or is unknown)
   */
  decide(key: string, decision: LedgerDecision): Promise<boolean>
  /** Deletes an intent still in doubt: its settle certainly never reached a facilitator. */
  forget(key: string): Promise<void>
  /**
   * Atomically takes up to `limit` intents in doubt, oldest first, that nobody holds: each is
   * held until `now + holdMs`, so two resolvers never get the same one at once.
   */
  claim(claim: LedgerClaim): Promise<LedgerEntry[]>
  /** Intents in doubt created before `before` (epoch ms). */
  unresolved(before: number): Promise<number>
  /** One intent, or undefined. */
  get(key: string): Promise<LedgerEntry | undefined>
  /**
   * Deletes at most `limit` decided intents decided before `before` (epoch ms): the retention of
   * `TELEMETRY_RETENTION_DAYS`. Intents in doubt are never deleted.
   *
   * @returns how many were deleted; fewer than `limit` means none older remain
   */
  prune(before: number, limit: number): Promise<number>
}

/** Schema version 3's table, for both backends (`int` and `text` are the backend's types). */
export function ledgerDdl(types: { int: string; text: string; strict: string }): string {
  const { int, text, strict } = types
  return `CREATE TABLE ${LEDGER_TABLE} (
    payment_key ${text} PRIMARY KEY,
    network ${text} NOT NULL,
    amount ${int} NOT NULL CHECK (amount >= 0),
    tool ${text} NOT NULL,
    transport ${text} NOT NULL CHECK (transport IN ('http', 'mcp')),
    created_at ${int} NOT NULL,
    expires_at ${int} NOT NULL,
    question ${text},
    outcome ${text} CHECK (outcome IN (${LEDGER_OUTCOMES.map((o) => `'${o}'`).join(', ')})),
    tx ${text},
    decided_at ${int},
    claimed_until ${int} NOT NULL
  )${strict};
  CREATE INDEX ${LEDGER_TABLE}_open ON ${LEDGER_TABLE} (created_at) WHERE outcome IS NULL;`
}

/**
 * The upsert of {@link SettlementLedger.intend}, positional parameters in column order (1 key,
 * 2 network, 3 amount, 4 tool, 5 transport, 6 created_at, 7 expires_at, 8 question,
 * 9 claimed_until); `p(n)` spells parameter n in the backend's syntax.
 */
export function intendSql(p: (n: number) => string): string {
  const t = LEDGER_TABLE
  return `INSERT INTO ${t} (payment_key, network, amount, tool, transport, created_at, expires_at,
      question, outcome, tx, decided_at, claimed_until)
    VALUES (${p(1)}, ${p(2)}, ${p(3)}, ${p(4)}, ${p(5)}, ${p(6)}, ${p(7)}, ${p(8)}, NULL, NULL, NULL, ${p(9)})
    ON CONFLICT (payment_key) DO UPDATE SET
      network = excluded.network, amount = excluded.amount, tool = excluded.tool,
      transport = excluded.transport, expires_at = excluded.expires_at,
      question = CASE WHEN ${t}.outcome IS NULL AND ${t}.question IS NOT NULL
        THEN ${t}.question ELSE excluded.question END,
      created_at = CASE WHEN ${t}.outcome IS NULL THEN ${t}.created_at ELSE excluded.created_at END,
      outcome = NULL, tx = NULL, decided_at = NULL, claimed_until = excluded.claimed_until
    WHERE ${t}.outcome IS NULL OR ${t}.outcome = 'not_landed'`
}

/** Columns of a ledger row, as {@link entryOf} reads them. */
export const LEDGER_COLUMNS = `payment_key, network, amount, tool, transport, created_at,
  expires_at, question, outcome, tx, decided_at`

/** A stored row as a {@link LedgerEntry}, whatever integer form the driver used. */
export function entryOf(row: Record<string, unknown>): LedgerEntry {
  const int = (v: unknown) => Number(v)
  return {
    key: String(row.payment_key),
    network: String(row.network),
    amount: String(row.amount),
    tool: String(row.tool),
    transport: row.transport === 'mcp' ? 'mcp' : 'http',
    createdAt: int(row.created_at),
    expiresAt: int(row.expires_at),
    question: row.question == null ? null : String(row.question),
    outcome: (row.outcome ?? null) as LedgerOutcome | null,
    transaction: row.tx == null ? null : String(row.tx),
    decidedAt: row.decided_at == null ? null : int(row.decided_at),
  }
}
