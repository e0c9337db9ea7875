import { createHmac } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterEach, describe, expect, it } from 'vitest'
import { payerKey, resolveSalt } from './payer-key.js'
import { createTelemetry } from './telemetry.js'

const EVM = '0xAb5801a7D398351b8bE11C439e05C5B3259aeC9B'
const SOLANA = '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM'

describe('payerKey', () => {
  it('is HMAC-SHA-256 over the lower-cased address (RFC 4231 test case 2)', () => {
    const expected = '5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843'
    expect(payerKey('Jefe', 'what do ya want for nothing?')).toBe(expected)
    expect(payerKey('Jefe', 'WHAT DO YA WANT FOR NOTHING?')).toBe(expected)
  })
})

describe('salt', () => {
  const dirs: string[] = []
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-salt-'))
    dirs.push(dir)
    return dir
  }
  afterEach(() => {
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  const storedKeys = (dataDir: string) => {
    const db = new Database(join(dataDir, 'telemetry.sqlite'), { readonly: true })
    try {
      return db
        .prepare('SELECT payer_key FROM payment_events ORDER BY at')
        .all()
        .map((r) => (r as { payer_key: string }).payer_key)
    } finally {
      db.close()
    }
  }
  const settled = (payer: string, at: number) =>
    ({
      tool: 'hash',
      transport: 'http',
      network: 'eip155:8453',
      amount: '1000',
      outcome: 'settled',
      payer,
      at,
    }) as const

  it('generates 32 random bytes once into a 0600 file and reuses it on the next start', async () => {
    const dataDir = tempDir()
    const first = await createTelemetry({ dataDir, cacheMs: 0 })
    expect(first.health().salt).toBe('generated')
    await first.record(settled(EVM, 1))
    await first.close()

    const file = join(dataDir, 'telemetry-salt')
    const salt = readFileSync(file, 'utf8').trim()
    expect(salt).toMatch(/^[0-9a-f]{64}$/)
    expect(statSync(file).mode & 0o777).toBe(0o600)

    const second = await createTelemetry({ dataDir, cacheMs: 0 })
    await second.record(settled(EVM.toLowerCase(), 2))
    const stats = await second.stats()
    await second.close()
    expect(readFileSync(file, 'utf8').trim()).toBe(salt)
    const expected = createHmac('sha256', salt).update(EVM.toLowerCase()).digest('hex')
    expect(storedKeys(dataDir)).toEqual([expected, expected])
    expect(stats).toMatchObject({ unique_payers: 1, repeat_payers: 1, repeat_paid_calls: 1 })
  })

  it('uses TELEMETRY_SALT as given and writes no salt file', async () => {
    const dataDir = tempDir()
    const salt = 'production-salt-shared-by-all-instances'
    const telemetry = await createTelemetry({ dataDir, salt })
    expect(telemetry.health().salt).toBe('configured')
    await telemetry.record(settled(EVM, 1))
    await telemetry.record(settled(SOLANA, 2))
    await telemetry.close()
    expect(storedKeys(dataDir)).toEqual([
      createHmac('sha256', salt).update(EVM.toLowerCase()).digest('hex'),
      createHmac('sha256', salt).update(SOLANA.toLowerCase()).digest('hex'),
    ])
    await expect(resolveSalt(salt, dataDir)).resolves.toEqual({ value: salt, source: 'configured' })
    expect(() => statSync(join(dataDir, 'telemetry-salt'))).toThrow()
  })

  it('refuses a salt file that is not 64 hex characters', async () => {
    const dataDir = tempDir()
    writeFileSync(join(dataDir, 'telemetry-salt'), 'short\n')
    await expect(resolveSalt(undefined, dataDir)).rejects.toThrow(/must hold 64 hex characters/)
  })
})
