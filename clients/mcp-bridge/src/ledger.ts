import type { Caps } from './config.js'
import { type DayFile, DayFileError, utcDay } from './day-file.js'
import { formatUsdc } from './usdc.js'

/** The environment variable of each cap, as messages name them. */
export type CapName = 'MAX_USDC_PER_CALL' | 'MAX_USDC_PER_SESSION' | 'MAX_USDC_PER_DAY'

/**
 * A payment was refused before signing because it would pass a spend cap. All amounts are atomic
 * USDC units; the message gives them in USDC and names the cap.
 */
export class SpendCapError extends Error {
  override readonly name = 'SpendCapError'
  constructor(
    readonly cap: CapName,
    /** The price of the refused call. */
    readonly amount: bigint,
    /** The cap's value. */
    readonly limit: bigint,
    /** Already spent or reserved under this cap (0 for the per-call cap). */
    readonly spent: bigint,
  ) {
    const scope =
      cap === 'MAX_USDC_PER_CALL'
        ? ''
        : `; ${formatUsdc(spent)} USDC already spent ${cap === 'MAX_USDC_PER_DAY' ? 'today (UTC)' : 'this session'}`
    super(
      `${cap} (${formatUsdc(limit)} USDC) refuses this call of ${formatUsdc(amount)} USDC${scope}. ` +
        'Nothing was signed.',
    )
  }
}

/** An amount held against the caps while its payment is signed, sent and settled. */
export interface Reservation {
  readonly network: string
  /** Atomic USDC units. */
  readonly amount: bigint
}

/** A report of the spend, in atomic USDC units per CAIP-2 network. */
export interface SpendSnapshot {
  /** UTC day of `today`. */
  day: string
  session: Record<string, bigint>
  /** Settled calls this session. */
  calls: number
  /** Spent today by every bridge process sharing the state file (this one included). */
  today: Record<string, bigint>
  /** Why `today` may be incomplete (the state file could not be read), if it is. */
  todayProblem?: string
  caps: Caps
}

const sum = (amounts: Record<string, bigint>): bigint =>
  Object.values(amounts).reduce((a, b) => a + b, 0n)

/** Per network, the larger of two records (what this process knows vs. what the file holds). */
function merged(a: Record<string, bigint>, b: Record<string, bigint>): Record<string, bigint> {
  const out = { ...a }
  for (const [network, amount] of Object.entries(b)) {
    if (amount > (out[network] ?? 0n)) out[network] = amount
  }
  return out
}

/** Where the ledger reports trouble that does not stop a call (e.g. a day file it cannot write). */
export type LedgerWarn = (message: string) => void

/**
 * The spend caps, enforced before anything is signed: a call first {@link SpendLedger.reserve}s
 * its price (which throws when a cap would be passed), then either {@link SpendLedger.commit}s it
 * (settled) or {@link SpendLedger.release}s it (refused, failed, never sent).
 *
 * The check and the reservation happen in one synchronous step, so concurrent calls of this
 * process can never together pass a cap: a second call sees the first one's reservation. Amounts
 * are bigint atomic USDC units throughout; no floating point.
 *
 * Every settled call is also added to the day file (shared by the user's bridge processes), so
 * the spend tool reports today's total and `MAX_USDC_PER_DAY` can be enforced. With a day cap, a
 * day file that cannot be read refuses the call (fail closed); without one it only warns.
 *
 * @example
 * const ledger = new SpendLedger({ perCall: 10_000n, perSession: 100_000n }, new DayFile(dir))
 * const held = ledger.reserve('eip155:8453', 1000n) // throws SpendCapError past a cap
 * try { … sign, send … ledger.commit(held) } catch { ledger.release(held) }
 */
export class SpendLedger {
  private readonly session: Record<string, bigint> = {}
  private calls = 0
  private pending = 0n
  private readonly open = new Set<Reservation>()
  /** What this process settled today: the floor of the day total if the file falls behind. */
  private local: { day: string; spent: Record<string, bigint> } = { day: '', spent: {} }

  constructor(
    readonly caps: Caps,
    private readonly dayFile: DayFile | undefined,
    private readonly warn: LedgerWarn = () => {},
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Holds `amount` against every cap, or refuses.
   *
   * @param network - CAIP-2 network the payment will be made on
   * @param amount - atomic USDC units
   * @throws {SpendCapError} naming the first cap the call would pass
   * @throws {DayFileError} when a day cap is set and the day file cannot be read
   */
  reserve(network: string, amount: bigint): Reservation {
    const { perCall, perSession, perDay } = this.caps
    if (amount > perCall) throw new SpendCapError('MAX_USDC_PER_CALL', amount, perCall, 0n)
    const session = sum(this.session) + this.pending
    if (session + amount > perSession) {
      throw new SpendCapError('MAX_USDC_PER_SESSION', amount, perSession, session)
    }
    if (perDay !== undefined) {
      const today = sum(this.todayStrict(utcDay(this.now()))) + this.pending
      if (today + amount > perDay)
        throw new SpendCapError('MAX_USDC_PER_DAY', amount, perDay, today)
    }
    const reservation: Reservation = { network, amount }
    this.pending += amount
    this.open.add(reservation)
    return reservation
  }

  /**
   * Counts a reserved amount as spent: this session, and today in the day file. A day file that
   * cannot be written is reported to `warn` (the payment is made; this process still counts it).
   * A reservation is ended once; later commits or releases of it do nothing.
   */
  commit(reservation: Reservation): void {
    if (!this.end(reservation)) return
    const { network, amount } = reservation
    this.session[network] = (this.session[network] ?? 0n) + amount
    this.calls += 1
    const day = utcDay(this.now())
    if (this.local.day !== day) this.local = { day, spent: {} }
    this.local.spent[network] = (this.local.spent[network] ?? 0n) + amount
    if (!this.dayFile) return
    try {
      this.dayFile.add(day, network, amount)
    } catch (error) {
      this.warn(`day spend not recorded: ${(error as Error).message}`)
    }
  }

  /** Gives a reserved amount back (the call was refused or failed, nothing settled). */
  release(reservation: Reservation): void {
    this.end(reservation)
  }

  /** What was spent this session and today, with the caps. Never throws. */
  snapshot(): SpendSnapshot {
    const day = utcDay(this.now())
    let today: Record<string, bigint>
    let todayProblem: string | undefined
    try {
      today = this.todayStrict(day)
    } catch (error) {
      today = this.localOn(day)
      todayProblem = (error as Error).message
    }
    return {
      day,
      session: { ...this.session },
      calls: this.calls,
      today,
      ...(todayProblem ? { todayProblem } : {}),
      caps: { ...this.caps },
    }
  }

  private end(reservation: Reservation): boolean {
    if (!this.open.delete(reservation)) return false
    this.pending -= reservation.amount
    return true
  }

  private localOn(day: string): Record<string, bigint> {
    return this.local.day === day ? { ...this.local.spent } : {}
  }

  /** Today's spend from the day file, never below what this process settled today. */
  private todayStrict(day: string): Record<string, bigint> {
    const local = this.localOn(day)
    if (!this.dayFile) return local
    try {
      return merged(this.dayFile.read(day).spent, local)
    } catch (error) {
      throw error instanceof DayFileError ? error : new DayFileError(String(error))
    }
  }
}
