import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeSync,
} from 'node:fs'
import { dirname, join } from 'node:path'
import { parseAtomic } from './usdc.js'

/** Name of the state file inside the state directory. */
export const DAY_FILE_NAME = 'spend-day.json'

/**
 * What was spent on one UTC day, per CAIP-2 network, in atomic USDC units.
 *
 * @example
 * { day: '2025-06-01', spent: { 'eip155:8453': 2000n } }
 */
export interface DaySpend {
  /** UTC calendar day, `YYYY-MM-DD`. */
  day: string
  spent: Record<string, bigint>
}

/** The state file exists but cannot be read or does not hold a day record. */
export class DayFileError extends Error {
  override readonly name = 'DayFileError'
}

/**
 * The UTC calendar day of an instant: the day caps roll over at 00:00 UTC, wherever the user is.
 *
 * @example
 * utcDay(new Date('2025-06-01T23:59:59-05:00')) // '2025-06-02'
 */
export function utcDay(now: Date): string {
  return now.toISOString().slice(0, 10)
}

/**
 * The day-spend state file: one small JSON document
 * `{"version":1,"day":"2025-06-01","spent":{"eip155:8453":"2000"}}` (amounts as atomic strings).
 *
 * Every write goes to a temporary file in the same directory, is flushed to disk, and replaces the
 * old file with `rename`, which is atomic on POSIX and on NTFS: a crash or a concurrent reader sees
 * the old day record or the new one, never half of one. All I/O is synchronous on purpose: the
 * ledger checks a cap and reserves in one turn of the event loop, so two calls of this process
 * cannot both pass a check before either is counted.
 *
 * Several bridge processes may share the file (two MCP clients of one user). Each adds its own
 * settled spend with a read-modify-write of microseconds, but in-flight reservations are per
 * process: two processes paying in the same instant can each pass the day cap once.
 */
export class DayFile {
  /** Absolute path of the state file. */
  readonly path: string

  /** @param dir - the state directory, created (mode 0700) on the first write */
  constructor(dir: string) {
    this.path = join(dir, DAY_FILE_NAME)
  }

  /**
   * What was spent on `day`: zero when the file is missing or holds an earlier day (the rollover).
   *
   * @throws {DayFileError} when the file exists but cannot be read or parsed
   */
  read(day: string): DaySpend {
    let text: string
    try {
      text = readFileSync(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { day, spent: {} }
      throw new DayFileError(`cannot read ${this.path}: ${(error as Error).message}`)
    }
    const stored = parseDayRecord(text)
    if (!stored) throw new DayFileError(`${this.path} does not hold a day-spend record`)
    return stored.day === day ? stored : { day, spent: {} }
  }

  /**
   * Adds `amount` atomic units spent on `network` to `day` and writes the file atomically.
   *
   * @returns the day's record after the addition
   * @throws {DayFileError} when the file cannot be read or written
   */
  add(day: string, network: string, amount: bigint): DaySpend {
    const current = this.read(day)
    const next: DaySpend = {
      day,
      spent: { ...current.spent, [network]: (current.spent[network] ?? 0n) + amount },
    }
    this.write(next)
    return next
  }

  private write(record: DaySpend): void {
    const spent = Object.fromEntries(Object.entries(record.spent).map(([n, a]) => [n, `${a}`]))
    const text = `${JSON.stringify({ version: 1, day: record.day, spent })}\n`
    const temp = `${this.path}.${process.pid}.${Date.now()}.tmp`
    try {
      mkdirSync(dirname(this.path), { recursive: true, mode: 0o700 })
      const fd = openSync(temp, 'w', 0o600)
      try {
        writeSync(fd, text)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      renameSync(temp, this.path)
    } catch (error) {
      try {
        unlinkSync(temp)
      } catch {
        // Nothing to clean up.
      }
      throw new DayFileError(`cannot write ${this.path}: ${(error as Error).message}`)
    }
  }
}

/** The day record in the file's text, or `undefined` when it is not one. */
function parseDayRecord(text: string): DaySpend | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { version, day, spent } = value as Record<string, unknown>
  if (version !== 1 || typeof day !== 'string' || !/^\d{4}-\d{2}-\d{2}$/.test(day)) return undefined
  if (typeof spent !== 'object' || spent === null || Array.isArray(spent)) return undefined
  const amounts: Record<string, bigint> = {}
  for (const [network, amount] of Object.entries(spent)) {
    const parsed = parseAtomic(amount)
    if (parsed === undefined) return undefined
    amounts[network] = parsed
  }
  return { day, spent: amounts }
}
