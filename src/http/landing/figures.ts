import { networkInfo } from '../../payment/networks.js'
import type { Rail } from '../../payment/rails.js'
import type { Money, Stats } from '../../telemetry/index.js'
import type { FigureFormat } from './format.js'

/** One live figure of SPEC section 1 and where /stats holds it. */
export interface Figure {
  /** Dotted path into the /stats object, e.g. `revenue.last_24h`; the page's `data-stat`. */
  path: string
  label: string
  /** One line saying what is counted. */
  hint: string
  format: FigureFormat
}

/** A titled group of figures, one card row on the page. */
export interface FigureGroup {
  id: string
  title: string
  figures: readonly Figure[]
}

/**
 * Every figure SPEC section 1 asks the landing page to show, except network activity (one card per
 * rail, see {@link networkRows}), and the part of calls and revenue that came through prepaid
 * channels, grouped as the page shows them.
 */
export const FIGURE_GROUPS: readonly FigureGroup[] = [
  {
    id: 'calls',
    title: 'Calls',
    figures: [
      {
        path: 'paid_calls',
        label: 'Paid calls',
        hint: 'Every payment verified, whether its call then settled or not (a tool error or a failed settlement charges nothing)',
        format: 'count',
      },
      {
        path: 'successful_paid_calls',
        label: 'Successful paid calls',
        hint: 'Paid calls that settled and were answered 200: the ones that were charged',
        format: 'count',
      },
      {
        path: 'channels.calls',
        label: 'Via prepaid channels',
        hint: 'Successful paid calls paid by a voucher against a prepaid deposit (x402 batch-settlement)',
        format: 'count',
      },
    ],
  },
  {
    id: 'revenue',
    title: 'Revenue',
    figures: [
      {
        path: 'revenue.lifetime',
        label: 'Lifetime revenue',
        hint: 'All settled payments',
        format: 'usdc',
      },
      {
        path: 'revenue.last_24h',
        label: '24-hour revenue',
        hint: 'Settled this UTC hour and the 23 whole hours before it (counted by the hour)',
        format: 'usdc',
      },
      {
        path: 'revenue.last_7d',
        label: '7-day revenue',
        hint: 'Settled this UTC hour and the 167 whole hours before it (counted by the hour)',
        format: 'usdc',
      },
      {
        path: 'channels.revenue',
        label: 'Via prepaid channels',
        hint: 'The part of lifetime revenue paid by vouchers against prepaid deposits',
        format: 'usdc',
      },
    ],
  },
  {
    id: 'payers',
    title: 'Payers',
    figures: [
      {
        path: 'unique_payers',
        label: 'Unique payers',
        hint: 'Distinct paying addresses',
        format: 'count',
      },
      {
        path: 'repeat_payers',
        label: 'Repeat payers',
        hint: 'Payers with two or more successful calls',
        format: 'count',
      },
      {
        path: 'repeat_paid_calls',
        label: 'Repeat paid calls',
        hint: "Successful calls after a payer's first",
        format: 'count',
      },
      {
        path: 'repeat_call_rate',
        label: 'Repeat call rate',
        hint: 'Repeat paid calls ÷ successful paid calls',
        format: 'rate',
      },
    ],
  },
]

/**
 * Reads a figure from /stats by its dotted path.
 *
 * @example statValue(stats, 'revenue.lifetime') // { atomic: '6000', usdc: '0.006' }
 * @throws {Error} when the path does not lead to a number or an amount (a figure list bug)
 */
export function statValue(stats: Stats, path: string): number | Money {
  let value: unknown = stats
  for (const key of path.split('.')) value = (value as Record<string, unknown> | undefined)?.[key]
  if (typeof value === 'number') return value
  if (value && typeof value === 'object' && 'usdc' in value && 'atomic' in value) {
    return value as Money
  }
  throw new Error(`no figure at /stats path ${path}`)
}

/** Activity of one network, zero-filled. */
export interface NetworkRow {
  /** CAIP-2 network identifier. */
  network: string
  /**
   * Display name, e.g. `Base`: the rail's, else the network's known name (a rail of the other
   * stage), else the identifier itself.
   */
  name: string
  calls: number
  revenue: Money
}

const ZERO: Money = { atomic: '0', usdc: '0' }

/**
 * The network activity rows: every configured rail, zero-filled when /stats has no entry for it
 * (its `networks` lists only networks with settled calls), then any other network /stats reports
 * (a rail configured earlier), by identifier.
 *
 * @example
 * networkRows([{ id: 'evm', network: 'eip155:8453', name: 'Base' }], undefined)
 * // [{ network: 'eip155:8453', name: 'Base', calls: 0, revenue: { atomic: '0', usdc: '0' } }]
 */
export function networkRows(
  rails: readonly Pick<Rail, 'network' | 'name'>[],
  stats: Stats | undefined,
): NetworkRow[] {
  const seen = new Set<string>()
  const rows: NetworkRow[] = []
  const add = (network: string, name: string) => {
    if (seen.has(network)) return
    seen.add(network)
    const entry = stats?.networks[network]
    rows.push({ network, name, calls: entry?.calls ?? 0, revenue: entry?.revenue ?? ZERO })
  }
  for (const rail of rails) add(rail.network, rail.name)
  for (const network of Object.keys(stats?.networks ?? {}).sort()) {
    add(network, networkInfo(network).name)
  }
  return rows
}
