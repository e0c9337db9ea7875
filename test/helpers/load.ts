import { decodePaymentResponseHeader } from '@x402/core/http'
import type { SettleResponse } from '@x402/core/types'
import type { DevStack } from '../../src/devnet/stack.js'
import type { ToolDefinition } from '../../src/tools/types.js'
import { paidFetch } from './clients.js'
import { payerKeys, type Rail } from './rails.js'

/** One paid call of a load run, as the client saw it. */
export interface CallRecord {
  rail: Rail
  /** Index of the dev stack payer on that rail. */
  payer: number
  tool: string
  /** The tool's price in atomic USDC. */
  price: bigint
  /** HTTP status of the final response; 0 when no response came (connection error). */
  status: number
  /**
   * `ok` for a 200; otherwise the failure envelope's `code`, `http_<status>` for a body that is
   * not the envelope, or `fetch_failed` (no response).
   */
  code: string
  /** Whole paid round trip (402, signing, paid request), in milliseconds. */
  ms: number
  /** When the answer came (or the call failed): `performance.now()` of this process, in ms. */
  end: number
  /** The decoded PAYMENT-RESPONSE header, when there was one. */
  settlement?: SettleResponse
  /** `result` of a 200 envelope. */
  result?: unknown
}

/** What a load run does. */
export interface LoadPlan {
  /** Where calls go (the nginx front, or instances directly). */
  url: string
  stack: DevStack
  /** Payer indexes of the dev stack; each pays on both rails. */
  payers: readonly number[]
  tools: readonly ToolDefinition[]
  /** Calls in flight at once. */
  concurrency: number
  /** Stop after this many calls… */
  calls?: number
  /** …or start no new call after this many milliseconds. */
  durationMs?: number
}

/** A paying client per payer and rail, built once: `paidFetch` with the official client. */
type Payers = { rail: Rail; payer: number; pay: typeof fetch }[]

async function payersOf(plan: LoadPlan): Promise<Payers> {
  const rails: Rail[] = ['evm', 'solana']
  return Promise.all(
    plan.payers.flatMap((payer) =>
      rails.map(async (rail) => ({
        rail,
        payer,
        pay: (await paidFetch(payerKeys(plan.stack, rail, payer), rail)) as typeof fetch,
      })),
    ),
  )
}

/**
 * Runs paid calls from several payers on both rails, `concurrency` at a time, through the
 * official `@x402/fetch` client: call i goes to payer-rail pair i mod pairs and to a tool that
 * rotates every round, with the tool's first catalogue example as body. Never throws for a failed
 * call: every outcome is a {@link CallRecord}.
 *
 * @returns the records in completion order and the wall time of the run in milliseconds
 */
export async function runLoad(plan: LoadPlan): Promise<{ records: CallRecord[]; wallMs: number }> {
  if (plan.calls === undefined && plan.durationMs === undefined) {
    throw new Error('runLoad needs calls or durationMs')
  }
  const payers = await payersOf(plan)
  const records: CallRecord[] = []
  const started = performance.now()
  let next = 0
  const more = () =>
    (plan.calls === undefined || next < plan.calls) &&
    (plan.durationMs === undefined || performance.now() - started < plan.durationMs)
  const worker = async () => {
    while (more()) {
      const i = next++
      const who = payers[i % payers.length]
      // The tool shifts by one every round, so each payer-rail pair meets every tool.
      const tool = plan.tools[(i + Math.floor(i / payers.length)) % plan.tools.length]
      if (!who || !tool) throw new Error('empty load plan')
      records.push(await call(plan.url, who, tool))
    }
  }
  await Promise.all(Array.from({ length: plan.concurrency }, worker))
  return { records, wallMs: performance.now() - started }
}

async function call(url: string, who: Payers[number], tool: ToolDefinition): Promise<CallRecord> {
  const base = { rail: who.rail, payer: who.payer, tool: tool.id, price: BigInt(tool.price) }
  const t0 = performance.now()
  try {
    const res = await who.pay(`${url}${tool.path}`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(tool.examples[0]),
      signal: AbortSignal.timeout(90_000),
    })
    const text = await res.text()
    const end = performance.now()
    const ms = end - t0
    const header = res.headers.get('PAYMENT-RESPONSE')
    const settlement = header ? decodePaymentResponseHeader(header) : undefined
    let body: { ok?: unknown; code?: unknown; result?: unknown } | undefined
    try {
      body = JSON.parse(text) as typeof body
    } catch {
      body = undefined
    }
    const code =
      res.status === 200 && body?.ok === true
        ? 'ok'
        : typeof body?.code === 'string'
          ? body.code
          : `http_${res.status}`
    return {
      ...base,
      status: res.status,
      code,
      ms,
      end,
      ...(settlement ? { settlement } : {}),
      ...(res.status === 200 ? { result: body?.result } : {}),
    }
  } catch {
    const end = performance.now()
    return { ...base, status: 0, code: 'fetch_failed', ms: end - t0, end }
  }
}

/** Figures of one load case, for the closing table. */
export interface CaseFigures {
  name: string
  calls: number
  ok: number
  /** 200s per second of wall time. */
  okPerSecond: number
  p50: number
  p99: number
  /** Non-200 outcomes by code. */
  errors: Record<string, number>
  /** Settled on chain without a 200 reaching the client (only a SIGKILL may cause them). */
  settledWithout200: number
  /** A note for the table (e.g. the instance's exit). */
  note?: string
}

/** The q-quantile (0..1) of `values` by the nearest-rank method; NaN when empty. */
export function quantile(values: readonly number[], q: number): number {
  if (values.length === 0) return Number.NaN
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.max(1, Math.ceil(q * sorted.length))
  return sorted[rank - 1] as number
}

/** Calls/s, p50/p99 latency of every call (failures included) and errors by code. */
export function figures(
  name: string,
  run: { records: CallRecord[]; wallMs: number },
  extra: { settledWithout200: number; note?: string },
): CaseFigures {
  const ms = run.records.map((r) => r.ms)
  const ok = run.records.filter((r) => r.code === 'ok').length
  const errors: Record<string, number> = {}
  for (const r of run.records) {
    if (r.code !== 'ok') errors[r.code] = (errors[r.code] ?? 0) + 1
  }
  return {
    name,
    calls: run.records.length,
    ok,
    okPerSecond: ok / (run.wallMs / 1000),
    p50: quantile(ms, 0.5),
    p99: quantile(ms, 0.99),
    errors,
    settledWithout200: extra.settledWithout200,
    ...(extra.note ? { note: extra.note } : {}),
  }
}

/** The figures as a Markdown table. */
export function figuresTable(rows: readonly CaseFigures[]): string {
  const lines = [
    '| case | calls | 200 | 200/s | p50 | p99 | errors by code | settled without 200 | note |',
    '| --- | --- | --- | --- | --- | --- | --- | --- | --- |',
  ]
  for (const r of rows) {
    const errors = Object.entries(r.errors)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([code, n]) => `${code} ${n}`)
      .join(', ')
    lines.push(
      `| ${r.name} | ${r.calls} | ${r.ok} | ${r.okPerSecond.toFixed(1)} | ${Math.round(r.p50)} ms | ${Math.round(r.p99)} ms | ${errors || 'none'} | ${r.settledWithout200} | ${r.note ?? ''} |`,
    )
  }
  return lines.join('\n')
}
