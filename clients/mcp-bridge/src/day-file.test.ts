import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { DAY_FILE_NAME, DayFile, DayFileError, utcDay } from './day-file.js'

let dir: string
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'bridge-day-'))
})
afterEach(() => rmSync(dir, { recursive: true, force: true }))

const BASE = 'eip155:8453'
const SOL = 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp'

describe('utcDay', () => {
  it('is the UTC calendar day, whatever the offset of the instant', () => {
    expect(utcDay(new Date('2025-06-01T23:59:59.999Z'))).toBe('2025-06-01')
    expect(utcDay(new Date('2025-06-02T00:00:00.000Z'))).toBe('2025-06-02')
    expect(utcDay(new Date('2025-06-01T20:00:00-05:00'))).toBe('2025-06-02')
    expect(utcDay(new Date('2025-06-02T01:00:00+02:00'))).toBe('2025-06-01')
  })
})

describe('DayFile', () => {
  it('reads zero when there is no file yet, and creates its directory on the first write', () => {
    const file = new DayFile(join(dir, 'nested', 'state'))
    expect(file.read('2025-06-01')).toEqual({ day: '2025-06-01', spent: {} })
    file.add('2025-06-01', BASE, 1000n)
    expect(file.read('2025-06-01')).toEqual({ day: '2025-06-01', spent: { [BASE]: 1000n } })
    expect(statSync(join(dir, 'nested', 'state')).mode & 0o777).toBe(0o700)
    expect(statSync(file.path).mode & 0o777).toBe(0o600)
  })

  it('adds per network in atomic units and stores them as strings', () => {
    const file = new DayFile(dir)
    file.add('2025-06-01', BASE, 1000n)
    file.add('2025-06-01', SOL, 3000n)
    const after = file.add('2025-06-01', BASE, 1000n)
    expect(after).toEqual({ day: '2025-06-01', spent: { [BASE]: 2000n, [SOL]: 3000n } })
    expect(JSON.parse(readFileSync(join(dir, DAY_FILE_NAME), 'utf8'))).toEqual({
      version: 1,
      day: '2025-06-01',
      spent: { [BASE]: '2000', [SOL]: '3000' },
    })
  })

  it('rolls over at the UTC day: an earlier day reads as zero and the next write replaces it', () => {
    const file = new DayFile(dir)
    file.add('2025-06-01', BASE, 5000n)
    expect(file.read('2025-06-02')).toEqual({ day: '2025-06-02', spent: {} })
    file.add('2025-06-02', SOL, 3000n)
    expect(file.read('2025-06-02').spent).toEqual({ [SOL]: 3000n })
    expect(file.read('2025-06-01').spent).toEqual({})
  })

  it('writes through a temporary file and rename, leaving no temporary file behind', () => {
    const file = new DayFile(dir)
    for (let i = 0; i < 5; i++) file.add('2025-06-01', BASE, 1n)
    expect(readdirSync(dir)).toEqual([DAY_FILE_NAME])
    expect(file.read('2025-06-01').spent[BASE]).toBe(5n)
  })

  it('raises DayFileError, not a raw fs error, when the state directory is unusable', () => {
    const notADir = join(dir, 'file')
    writeFileSync(notADir, 'x')
    const file = new DayFile(notADir)
    expect(() => file.read('2025-06-01')).toThrow(DayFileError)
    expect(() => file.add('2025-06-01', BASE, 1000n)).toThrow(/^cannot read .*spend-day\.json/)
  })

  it.each([
    ['not JSON', '{"version":1,'],
    ['another version', '{"version":2,"day":"2025-06-01","spent":{}}'],
    ['a bad day', '{"version":1,"day":"June 1st","spent":{}}'],
    ['a float amount', '{"version":1,"day":"2025-06-01","spent":{"eip155:8453":"0.001"}}'],
    ['a numeric amount', '{"version":1,"day":"2025-06-01","spent":{"eip155:8453":1000}}'],
    ['a list', '[]'],
  ])('refuses a file holding %s', (_label, text) => {
    writeFileSync(join(dir, DAY_FILE_NAME), text)
    expect(() => new DayFile(dir).read('2025-06-01')).toThrow(DayFileError)
  })
})
