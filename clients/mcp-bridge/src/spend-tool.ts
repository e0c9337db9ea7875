import type { CallToolResult, Tool } from '@modelcontextprotocol/client'
import { type OpenChannel, shortChannel } from './channels.js'
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
    'under them. Only settled calls count; refused or failed calls are never charged. With a ' +
    'Base wallet, also the prepaid channel it pays by voucher from (its deposit, what was ' +
    'charged, what is left, MAX_USDC_DEPOSIT); a deposit is not spending: what was not charged ' +
    'comes back with payload_tools_refund.',
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
      channel: {
        type: 'object',
        description:
          'Prepaid channel (x402 batch-settlement on Base), when the bridge may pay by one: ' +
          '`open` is the channel it pays this service from (null before its first deposit).',
        properties: {
          scheme: { const: 'batch-settlement' },
          max_deposit: usdc,
          open: {
            anyOf: [
              {
                type: 'object',
                properties: {
                  network: { type: 'string' },
                  id: { type: 'string', description: 'channel id, shortened (0x1234…abcd)' },
                  balance: usdc,
                  charged: usdc,
                  remaining: usdc,
                },
                required: ['network', 'id', 'balance', 'charged', 'remaining'],
              },
              { type: 'null' },
            ],
          },
        },
        required: ['scheme', 'max_deposit', 'open'],
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
export function spendResult(
  snapshot: SpendSnapshot,
  rails: readonly RailId[],
  channel?: { cap: bigint; open: OpenChannel | undefined },
): CallToolResult {
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
    ...(channel ? { channel: channelReport(channel.cap, channel.open) } : {}),
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
      : `${report.caps.per_day} per day (${report.remaining.today} left).`) +
    (report.channel ? ` ${channelText(report.channel)}` : '')
  return { content: [{ type: 'text', text }], structuredContent: report }
}

/** The `channel` member of the report: the deposit cap and the open channel, in USDC. */
function channelReport(cap: bigint, open: OpenChannel | undefined) {
  return {
    scheme: 'batch-settlement' as const,
    max_deposit: formatUsdc(cap),
    open: open
      ? {
          network: open.network,
          id: shortChannel(open.id),
          balance: formatUsdc(open.balance),
          charged: formatUsdc(open.charged),
          remaining: left(open.balance, open.charged),
        }
      : null,
  }
}

function channelText(channel: ReturnType<typeof channelReport>): string {
  const { open } = channel
  if (!open) {
    return (
      `No prepaid channel open (a service that offers one gets a deposit of at most ` +
      `${channel.max_deposit} USDC, MAX_USDC_DEPOSIT).`
    )
  }
  const rail = railOf(open.network)
  return (
    `Prepaid channel ${open.id} on ${rail ? RAIL_LABEL[rail] : open.network}: ${open.charged} of ` +
    `its ${open.balance} USDC deposit charged, ${open.remaining} left (payload_tools_refund ` +
    'gets it back).'
  )
}
