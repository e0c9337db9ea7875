import type { EventRow } from './types.js'
import { HOUR_MS } from './windows.js'

/**
 * `usage_totals.metric` values. Each metric has a bounded set of items (outcomes, networks, tools,
 * schemes, three payer counters), so the totals table never grows with history.
 */
export const METRIC = {
  /** Item: outcome name; every event. */
  outcome: 'outcome',
  /** Item: CAIP-2 network; settled events. */
  settledNetwork: 'settled_network',
  /** Item: tool id; settled events. */
  settledTool: 'settled_tool',
  /** Item: x402 scheme (`exact`, `batch-settlement`); settled events. */
  settledScheme: 'settled_scheme',
  /** Items: {@link PAYER_COUNTER}; `calls` holds the count, `amount` stays 0. */
  payers: 'payers',
} as const

/** Items of the `payers` metric. */
export const PAYER_COUNTER = {
  /** Payers whose settled calls went 0 -> 1. */
  unique: 'unique',
  /** Payers whose settled calls went 1 -> 2. */
  repeat: 'repeat',
  /** Settled events that carry a payer key. */
  settledWithPayer: 'settled_with_payer',
} as const

/** What one batch adds to one `usage_hourly` row. */
export interface HourlyDelta {
  outcome: string
  /** UTC hour number, `floor(at / 3_600_000)`. */
  hour: number
  network: string
  tool: string
  transport: string
  /** x402 scheme that paid. */
  scheme: string
  calls: number
  /** Atomic USDC units. */
  amount: bigint
}

/** What one batch adds to one `settled_hourly` row: the settled events of one UTC hour. */
export interface SettledHourDelta {
  hour: number
  calls: number
  /** Atomic USDC units. */
  amount: bigint
}

/** What one batch adds to one `usage_totals` row. */
export interface TotalDelta {
  metric: string
  item: string
  calls: number
  /** Atomic USDC units. */
  amount: bigint
}

/** What one batch adds to one `payers` row: its settled events. */
export interface PayerDelta {
  payerKey: string
  calls: number
  /** Epoch ms of the earliest and latest settled event in the batch. */
  firstAt: number
  lastAt: number
}

/**
 * The rollup changes of a batch of newly inserted events. Every list is sorted by its table's
 * primary key, in the column order of that key: writers that touch rows in one global order
 * (payers, usage_hourly, settled_hourly, then usage_totals, each by key) cannot deadlock.
 */
export interface RollupDelta {
  payers: PayerDelta[]
  hourly: HourlyDelta[]
  settledHours: SettledHourDelta[]
  /** Without the payer counters, which depend on the payers' previous counts. */
  totals: TotalDelta[]
}

const compare = (a: string | number, b: string | number) => (a < b ? -1 : a > b ? 1 : 0)

/**
 * Orders hourly rows by the `usage_hourly` key `(outcome, hour, network, tool, transport, scheme)`.
 */
export function compareHourly(a: HourlyDelta, b: HourlyDelta): number {
  return (
    compare(a.outcome, b.outcome) ||
    compare(a.hour, b.hour) ||
    compare(a.network, b.network) ||
    compare(a.tool, b.tool) ||
    compare(a.transport, b.transport) ||
    compare(a.scheme, b.scheme)
  )
}

/** Orders totals rows by the `usage_totals` key `(metric, item)`. */
export function compareTotals(a: TotalDelta, b: TotalDelta): number {
  return compare(a.metric, b.metric) || compare(a.item, b.item)
}

/**
 * Folds newly inserted events into the rollup changes they cause.
 *
 * @example
 * rollupDelta([{ outcome: 'settled', at: 7_200_000, network: 'eip155:8453', tool: 'hash',
 *   transport: 'http', amount: '1000', payerKey: 'ab…', id: '…' }])
 * // { payers: [{ payerKey: 'ab…', calls: 1, … }],
 * //   hourly: [{ outcome: 'settled', hour: 2, …, scheme: 'exact', calls: 1, amount: 1000n }],
 * //   settledHours: [{ hour: 2, calls: 1, amount: 1000n }],
 * //   totals: [outcome/settled, payers/settled_with_payer, settled_network/eip155:8453,
 * //            settled_scheme/exact, settled_tool/hash] }
 * @param rows - events the store has just inserted (never ones it already had); a row without
 *   a scheme counts as `exact`
 */
export function rollupDelta(rows: readonly EventRow[]): RollupDelta {
  const hourly = new Map<string, HourlyDelta>()
  const totals = new Map<string, TotalDelta>()
  const payers = new Map<string, PayerDelta>()
  const settledHours = new Map<number, SettledHourDelta>()
  const addTotal = (metric: string, item: string, calls: number, amount: bigint) => {
    const id = `${metric}\u0000${item}`
    const found = totals.get(id)
    if (found) {
      found.calls += calls
      found.amount += amount
    } else totals.set(id, { metric, item, calls, amount })
  }
  for (const row of rows) {
    const amount = BigInt(row.amount)
    const hour = Math.floor(row.at / HOUR_MS)
    const scheme = row.scheme ?? 'exact'
    const id = [row.outcome, hour, row.network, row.tool, row.transport, scheme].join('\u0000')
    const found = hourly.get(id)
    if (found) {
      found.calls++
      found.amount += amount
    } else {
      hourly.set(id, {
        outcome: row.outcome,
        hour,
        network: row.network,
        tool: row.tool,
        transport: row.transport,
        scheme,
        calls: 1,
        amount,
      })
    }
    addTotal(METRIC.outcome, row.outcome, 1, amount)
    if (row.outcome !== 'settled') continue
    const settledHour = settledHours.get(hour)
    if (settledHour) {
      settledHour.calls++
      settledHour.amount += amount
    } else settledHours.set(hour, { hour, calls: 1, amount })
    addTotal(METRIC.settledNetwork, row.network, 1, amount)
    addTotal(METRIC.settledTool, row.tool, 1, amount)
    addTotal(METRIC.settledScheme, scheme, 1, amount)
    if (row.payerKey === null) continue
    addTotal(METRIC.payers, PAYER_COUNTER.settledWithPayer, 1, 0n)
    const payer = payers.get(row.payerKey)
    if (payer) {
      payer.calls++
      payer.firstAt = Math.min(payer.firstAt, row.at)
      payer.lastAt = Math.max(payer.lastAt, row.at)
    } else
      payers.set(row.payerKey, {
        payerKey: row.payerKey,
        calls: 1,
        firstAt: row.at,
        lastAt: row.at,
      })
  }
  return {
    payers: [...payers.values()].sort((a, b) => compare(a.payerKey, b.payerKey)),
    hourly: [...hourly.values()].sort(compareHourly),
    settledHours: [...settledHours.values()].sort((a, b) => a.hour - b.hour),
    totals: [...totals.values()].sort(compareTotals),
  }
}

/**
 * The payer counter changes of a batch, from each payer's settled calls after the batch's upsert.
 * The upsert holds the payer's row lock until commit, so among concurrent transactions exactly one
 * sees a given crossing: `unique` counts payers that went from 0 to at least 1 settled call,
 * `repeat` those that went from at most 1 to at least 2.
 *
 * @example
 * payerCounterDeltas([{ payerKey: 'ab', calls: 2, … }], new Map([['ab', 3]]))
 * // [{ metric: 'payers', item: 'repeat', calls: 1, amount: 0n }]  (1 before, 3 after)
 * @param payers - the batch's payer changes
 * @param after - settled calls of each of those payers once the batch is applied
 * @throws {Error} when a payer of the batch has no count in `after` (a backend bug)
 */
export function payerCounterDeltas(
  payers: readonly PayerDelta[],
  after: ReadonlyMap<string, number>,
): TotalDelta[] {
  let unique = 0
  let repeat = 0
  for (const payer of payers) {
    const now = after.get(payer.payerKey)
    if (now === undefined) throw new Error('payer upsert returned no count')
    const before = now - payer.calls
    if (before === 0) unique++
    if (before < 2 && now >= 2) repeat++
  }
  const deltas: TotalDelta[] = []
  if (repeat > 0)
    deltas.push({ metric: METRIC.payers, item: PAYER_COUNTER.repeat, calls: repeat, amount: 0n })
  if (unique > 0)
    deltas.push({ metric: METRIC.payers, item: PAYER_COUNTER.unique, calls: unique, amount: 0n })
  return deltas
}

/**
 * Merges totals lists into one, summing rows with the same key, sorted by key (the lock order).
 */
export function mergeTotals(...lists: readonly (readonly TotalDelta[])[]): TotalDelta[] {
  const merged = new Map<string, TotalDelta>()
  for (const row of lists.flat()) {
    const id = `${row.metric}\u0000${row.item}`
    const found = merged.get(id)
    if (found) {
      found.calls += row.calls
      found.amount += row.amount
    } else merged.set(id, { ...row })
  }
  return [...merged.values()].sort(compareTotals)
}
