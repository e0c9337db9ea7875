import type { CallToolResult, Tool } from '@modelcontextprotocol/client'
import type { SpendSnapshot } from './ledger.js'
import { RAIL_LABEL, RAIL_NETWORK, type RailId, railOf } from './rails.js'
import { formatUsdc } from './usdc.js'

/** Name of the bridge's free local tool. */
export const SPEND_TOOL = 'payload_tools_spend'

const usdc = { type: 'string', pattern: '^\\d+(\\.\\d{1,6})?$' } as const
const usdcOrNull = { anyOf: [usdc, { type: 'null' }] } as const

/** The `tools/list` entry of {@link SPEND_TOOL}. */
export const spendTool: Tool = {
  name: SPEND_TOOL,
  title: 'Payload Tools spend',
  description:
    'Free and local, no network call: what this bridge has paid for Payload Tools this session ' +
    'and today (UTC day, every session sharing the state file), per rail, in USDC, with the ' +
    'spend caps (MAX_USDC_PER_CALL, MAX_USDC_PER_SESSION, MAX_USDC_PER_DAY) and what remains ' +
    'under them. Only settled calls count; refused or failed calls are never charged.',
  inputSchema: { type: 'object', properties: {}, additionalProperties: false },
  outputSchema: {
    type: 'object',
    properties: {
      currency: { const: 'USDC' },
      day: { type: 'string', description: 'UTC day of `today`, YYYY-MM-DD' },
      session: {
        type: 'object',
        properties: { total: usdc, calls: { type: 'integer', minimum: 0 } },
        required: ['total', 'calls'],
      },
      today: {
        type: 'object',
        properties: { total: usdc, note: { type: 'string' } },
        required: ['total'],
      },
      rails: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            rail: {
              enum: ['base', 'solana', null],
              description: 'null for a network that is neither rail (a hand-edited state file)',
            },
            network: { type: 'string' },
            session: usdc,
            today: usdc,
          },
          required: ['rail', 'network', 'session', 'today'],
        },
      },
      caps: {
        type: 'object',
        properties: { per_call: usdc, per_session: usdc, per_day: usdcOrNull },
        required: ['per_call', 'per_session', 'per_day'],
      },
      remaining: {
        type: 'object',
        properties: { session: usdc, today: usdcOrNull },
        required: ['session', 'today'],
      },
    },
    required: ['currency', 'day', 'session', 'today', 'rails', 'caps', 'remaining'],
  },
  annotations: {
    title: 'Payload Tools spend',
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  },
}

const total = (amounts: Record<string, bigint>) =>
  Object.values(amounts).reduce((a, b) => a + b, 0n)

/**
 * The networks to report, one row each: the wallet's rails, and every network with spend this
 * session or today. The day file is shared by every bridge process of the user, so today may
 * hold spend on a rail this wallet has no key for (another process paid on it); leaving it out
 * would make the rows not add up to the totals.
 */
function reportedNetworks(snapshot: SpendSnapshot, rails: readonly RailId[]): string[] {
  const spent = (network: string) =>
    (snapshot.session[network] ?? 0n) > 0n || (snapshot.today[network] ?? 0n) > 0n
  const known = (['base', 'solana'] as const)
    .filter((rail) => rails.includes(rail) || spent(RAIL_NETWORK[rail]))
    .map((rail) => RAIL_NETWORK[rail] as string)
  const others = [...new Set([...Object.keys(snapshot.session), ...Object.keys(snapshot.today)])]
    .filter((network) => railOf(network) === undefined && spent(network))
    .sort()
  return [...known, ...others]
}
const left = (cap: bigint, spent: bigint) => formatUsdc(cap > spent ? cap - spent : 0n)

/**
 * The result of {@link SPEND_TOOL}: decimal USDC strings, one row per rail of the wallet and per
 * network with spend, so that the rows add up to `session.total` and `today.total`.
 *
 * @example
 * spendResult(ledger.snapshot(), ['base']).structuredContent
 * // { currency: 'USDC', day: '2025-06-01', session: { total: '0.002', calls: 2 },
 * //   today: { total: '0.002' }, rails: [{ rail: 'base', network: 'eip155:8453', … }],
 * //   caps: { per_call: '0.01', per_session: '0.1', per_day: null },
 * //   remaining: { session: '0.098', today: null } }
 */
export function spendResult(snapshot: SpendSnapshot, rails: readonly RailId[]): CallToolResult {
  const { caps } = snapshot
  const session = total(snapshot.session)
  const today = total(snapshot.today)
  const report = {
    currency: 'USDC',
    day: snapshot.day,
    session: { total: formatUsdc(session), calls: snapshot.calls },
    today: {
      total: formatUsdc(today),
      ...(snapshot.todayProblem
        ? { note: `this process only; the day file is unreadable: ${snapshot.todayProblem}` }
        : {}),
    },
    rails: reportedNetworks(snapshot, rails).map((network) => ({
      rail: railOf(network) ?? null,
      network,
      session: formatUsdc(snapshot.session[network] ?? 0n),
      today: formatUsdc(snapshot.today[network] ?? 0n),
    })),
    caps: {
      per_call: formatUsdc(caps.perCall),
      per_session: formatUsdc(caps.perSession),
      per_day: caps.perDay === undefined ? null : formatUsdc(caps.perDay),
    },
    remaining: {
      session: left(caps.perSession, session),
      today: caps.perDay === undefined ? null : left(caps.perDay, today),
    },
  }
  const label = (r: (typeof report.rails)[number]) => (r.rail ? RAIL_LABEL[r.rail] : r.network)
  const per = (key: 'session' | 'today') =>
    report.rails.map((r) => `${label(r)} ${r[key]}`).join(', ')
  const text =
    `Spent ${report.session.total} USDC this session in ${snapshot.calls} paid ` +
    `call${snapshot.calls === 1 ? '' : 's'} (${per('session')}); ${report.today.total} USDC ` +
    `today (UTC ${snapshot.day}: ${per('today')}). Caps: ${report.caps.per_call} USDC per call, ` +
    `${report.caps.per_session} per session (${report.remaining.session} left), ` +
    (report.caps.per_day === null
      ? 'no daily cap.'
      : `${report.caps.per_day} per day (${report.remaining.today} left).`)
  return { content: [{ type: 'text', text }], structuredContent: report }
}
