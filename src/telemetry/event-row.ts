import { payerKey } from './payer-key.js'
import { type EventRow, OUTCOMES, type PaymentEvent, SCHEMES } from './types.js'
import { uuidOfName, uuidV7 } from './uuid-v7.js'

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * The id of the one telemetry event of a payment's settlement outcome (`settled` or
 * `settle_failed`), from its ledger key: whoever records it (the call, a retry, the resolver,
 * twice after a crash), the store keeps it once.
 *
 * @example settlementEventId('pay:5f1c…', 'settled') // a fixed UUID for that pair
 */
export function settlementEventId(
  paymentKey: string,
  outcome: 'settled' | 'settle_failed',
): string {
  return uuidOfName(`settlement:${paymentKey}:${outcome}`)
}

const INT64_MAX = 2n ** 63n - 1n
const MAX_LABEL_LENGTH = 100

/** Result of {@link toEventRow}: the row, or the name of the first invalid field. */
export type EventRowResult = { ok: true; row: EventRow } | { ok: false; field: keyof PaymentEvent }

/**
 * Validates an event and turns it into a storable row: the raw payer address is replaced by its
 * HMAC key here and goes no further, and a UUID makes the insert idempotent. The UUID is version 7
 * (RFC 9562: a millisecond timestamp, then random bits, monotonic within the process), so new rows
 * append to the events' primary-key index instead of landing on random pages, which kept inserts
 * into a table of a million events several times slower with random (version 4) UUIDs. Validating
 * before buffering matters: a row the database rejects would block the in-order flush for good.
 *
 * @example
 * toEventRow({ tool: 'hash', transport: 'http', network: 'eip155:8453', amount: '1000',
 *   outcome: 'settled', payer: '0xAb…' }, salt, Date.now())
 * // { ok: true, row: { id: '…', at: 1700000000000, …, payerKey: '3f…' } }
 * @param salt - HMAC key for payer keys
 * @param now - epoch milliseconds used when the event has no `at`
 */
export function toEventRow(event: PaymentEvent, salt: string, now: number): EventRowResult {
  const label = (v: unknown) =>
    typeof v === 'string' && v.length > 0 && v.length <= MAX_LABEL_LENGTH
  if (!label(event.tool)) return { ok: false, field: 'tool' }
  if (event.transport !== 'http' && event.transport !== 'mcp') {
    return { ok: false, field: 'transport' }
  }
  if (!label(event.network)) return { ok: false, field: 'network' }
  if (
    typeof event.amount !== 'string' ||
    !/^\d{1,19}$/.test(event.amount) ||
    BigInt(event.amount) > INT64_MAX
  ) {
    return { ok: false, field: 'amount' }
  }
  if (!OUTCOMES.includes(event.outcome)) return { ok: false, field: 'outcome' }
  if (event.scheme !== undefined && !SCHEMES.includes(event.scheme)) {
    return { ok: false, field: 'scheme' }
  }
  const at = Math.floor(event.at ?? now)
  if (!Number.isSafeInteger(at) || at < 0) return { ok: false, field: 'at' }
  if (event.payer !== undefined && typeof event.payer !== 'string') {
    return { ok: false, field: 'payer' }
  }
  if (event.id !== undefined && !UUID.test(event.id)) return { ok: false, field: 'id' }
  return {
    ok: true,
    row: {
      id: event.id ?? uuidV7(),
      at,
      tool: event.tool,
      transport: event.transport,
      network: event.network,
      amount: BigInt(event.amount).toString(),
      outcome: event.outcome,
      scheme: event.scheme ?? 'exact',
      payerKey: event.payer ? payerKey(salt, event.payer) : null,
    },
  }
}
