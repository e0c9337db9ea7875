import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DAY_FILE_NAME, DayFile, DayFileError } from './day-file.js'
import { SpendCapError, SpendLedger } from './ledger.js'

const BASE = 'eip155:8453'
const SOL = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

let dir: string
let clock: Date
const now = () => clock
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bridge-ledger-'))
  clock = new Date('2025-06-01T12:00:00Z')
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const capError = (fn: () => unknown): SpendCapError => {
  try {
    fn()
  } catch (error) {
    if (error instanceof SpendCapError) return error
    throw error
  }
  throw new Error('no SpendCapError')
}

describe('SpendLedger caps', () => {
  it('refuses a call above MAX_USDC_PER_CALL and names the cap and the amount', () => {
    const ledger = new SpendLedger({ perCall: 2000n, perSession: 100_000n }, undefined)
    const error = capError(() => ledger.reserve(BASE, 3000n))
    expect(error.cap).toBe('MAX_USDC_PER_CALL')
    expect(error.amount).toBe(3000n)
    expect(error.message).toBe(
      'MAX_USDC_PER_CALL (0.002 USDC) refuses this call of 0.003 USDC. Nothing was signed.',
    )
    expect(ledger.reserve(BASE, 2000n)).toEqual({ network: BASE, amount: 2000n })
  })

  it('lets the session reach its cap exactly, then refuses the next call', () => {
    const ledger = new SpendLedger({ perCall: 10_000n, perSession: 2000n }, undefined)
    ledger.commit(ledger.reserve(BASE, 1000n))
    ledger.commit(ledger.reserve(SOL, 1000n))
    const error = capError(() => ledger.reserve(BASE, 1000n))
    expect(error.cap).toBe('MAX_USDC_PER_SESSION')
    expect(error.spent).toBe(2000n)
    expect(error.message).toBe(
      'MAX_USDC_PER_SESSION (0.002 USDC) refuses this call of 0.001 USDC; 0.002 USDC already ' +
        'spent this session. Nothing was signed.',
    )
  })

  it('counts reservations in flight, so concurrent calls cannot together pass a cap', () => {
    const ledger = new SpendLedger({ perCall: 10_000n, perSession: 4000n }, undefined)
    const first = ledger.reserve(SOL, 3000n)
    expect(capError(() => ledger.reserve(BASE, 3000n)).spent).toBe(3000n)
    const small = ledger.reserve(BASE, 1000n)
    expect(() => ledger.reserve(BASE, 1n)).toThrow(SpendCapError)
    ledger.release(first)
    ledger.commit(small)
    expect(ledger.reserve(SOL, 3000n).amount).toBe(3000n)
  })

  it('gives a released reservation back, and ends a reservation only once', () => {
    const ledger = new SpendLedger({ perCall: 10_000n, perSession: 1000n }, undefined)
    const held = ledger.reserve(BASE, 1000n)
    ledger.release(held)
    ledger.release(held)
    ledger.commit(held) // already ended: not counted
    expect(ledger.snapshot().session).toEqual({})
    const again = ledger.reserve(BASE, 1000n)
    ledger.commit(again)
    ledger.commit(again)
    ledger.release(again)
    expect(ledger.snapshot()).toMatchObject({ session: { [BASE]: 1000n }, calls: 1 })
  })

  it('keeps the session per network and reports the caps', () => {
    const ledger = new SpendLedger(
      { perCall: 10_000n, perSession: 100_000n },
      undefined,
      () => {},
      now,
    )
    ledger.commit(ledger.reserve(BASE, 1000n))
    ledger.commit(ledger.reserve(SOL, 3000n))
    ledger.commit(ledger.reserve(SOL, 3000n))
    ledger.reserve(BASE, 1000n) // in flight: not spent
    expect(ledger.snapshot()).toEqual({
      day: '2025-06-01',
      session: { [BASE]: 1000n, [SOL]: 6000n },
      calls: 3,
      today: { [BASE]: 1000n, [SOL]: 6000n },
      caps: { perCall: 10_000n, perSession: 100_000n },
    })
  })
})

describe('SpendLedger day cap and day file', () => {
  it('records every settled call in the day file, with or without a day cap', () => {
    const file = new DayFile(dir)
    const ledger = new SpendLedger({ perCall: 10_000n, perSession: 100_000n }, file, () => {}, now)
    ledger.commit(ledger.reserve(BASE, 1000n))
    ledger.commit(ledger.reserve(SOL, 3000n))
    expect(file.read('2025-06-01').spent).toEqual({ [BASE]: 1000n, [SOL]: 3000n })
  })

  it('counts what other sessions spent today against MAX_USDC_PER_DAY', () => {
    const file = new DayFile(dir)
    file.add('2025-06-01', BASE, 4000n) // an earlier session of the same user
    const caps = { perCall: 10_000n, perSession: 100_000n, perDay: 5000n }
    const ledger = new SpendLedger(caps, file, () => {}, now)
    ledger.commit(ledger.reserve(BASE, 1000n))
    const error = capError(() => ledger.reserve(SOL, 1000n))
    expect(error.cap).toBe('MAX_USDC_PER_DAY')
    expect(error.message).toBe(
      'MAX_USDC_PER_DAY (0.005 USDC) refuses this call of 0.001 USDC; 0.005 USDC already spent ' +
        'today (UTC). Nothing was signed.',
    )
    expect(file.read('2025-06-01').spent).toEqual({ [BASE]: 5000n })
  })

  it('starts a fresh day at 00:00 UTC', () => {
    const file = new DayFile(dir)
    const caps = { perCall: 10_000n, perSession: 100_000n, perDay: 2000n }
    const ledger = new SpendLedger(caps, file, () => {}, now)
    clock = new Date('2025-06-01T23:59:59Z')
    ledger.commit(ledger.reserve(BASE, 2000n))
    expect(() => ledger.reserve(BASE, 1000n)).toThrow(SpendCapError)
    clock = new Date('2025-06-02T00:00:00Z')
    ledger.commit(ledger.reserve(BASE, 2000n))
    expect(file.read('2025-06-02').spent).toEqual({ [BASE]: 2000n })
    expect(ledger.snapshot()).toMatchObject({
      day: '2025-06-02',
      session: { [BASE]: 4000n },
      today: { [BASE]: 2000n },
    })
  })

  it('fails closed on an unreadable day file when a day cap is set, and only warns without one', () => {
    writeFileSync(join(dir, DAY_FILE_NAME), 'garbage')
    const file = new DayFile(dir)
    const capped = new SpendLedger(
      { perCall: 10_000n, perSession: 100_000n, perDay: 5000n },
      file,
      () => {},
      now,
    )
    expect(() => capped.reserve(BASE, 1000n)).toThrow(DayFileError)
    expect(capped.snapshot().todayProblem).toMatch(/does not hold a day-spend record/)

    const warnings: string[] = []
    const uncapped = new SpendLedger(
      { perCall: 10_000n, perSession: 100_000n },
      file,
      (m) => warnings.push(m),
      now,
    )
    uncapped.commit(uncapped.reserve(BASE, 1000n))
    expect(warnings).toEqual([expect.stringMatching(/^day spend not recorded: .*does not hold/)])
    expect(uncapped.snapshot()).toMatchObject({
      session: { [BASE]: 1000n },
      today: { [BASE]: 1000n },
    })
  })

  it('never reports or checks today below what this process settled, if the file falls behind', () => {
    const file = new DayFile(dir)
    const caps = { perCall: 10_000n, perSession: 100_000n, perDay: 3000n }
    const ledger = new SpendLedger(caps, file, () => {}, now)
    ledger.commit(ledger.reserve(BASE, 2000n))
    rmSync(file.path) // e.g. the user deleted it
    expect(ledger.snapshot().today).toEqual({ [BASE]: 2000n })
    expect(capError(() => ledger.reserve(BASE, 2000n)).spent).toBe(2000n)
  })
})
