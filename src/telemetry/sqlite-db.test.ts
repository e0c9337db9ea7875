import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { afterAll, describe, expect, it } from 'vitest'
import { TABLE } from './schema.js'
import { createSqliteCore, prepareOnce, SQLITE_SCHEMA_VERSION } from './sqlite-db.js'

const dir = mkdtempSync(join(tmpdir(), 'sqlite-db-test-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('prepareOnce', () => {
  it('gives the same Statement for the same SQL on one handle, a new one on another', () => {
    const a = new Database(':memory:')
    const b = new Database(':memory:')
    const first = prepareOnce(a, 'SELECT 1 AS one')
    expect(prepareOnce(a, 'SELECT 1 AS one')).toBe(first)
    expect(prepareOnce(a, 'SELECT 2 AS two')).not.toBe(first)
    expect(prepareOnce(b, 'SELECT 1 AS one')).not.toBe(first)
    expect(first.get()).toEqual({ one: 1 })
    a.close()
    b.close()
  })
})

describe('createSqliteCore', () => {
  it('migrates and pings repeatedly through cached statements; the file is in WAL mode', () => {
    const path = join(dir, 'core.sqlite')
    const core = createSqliteCore(path)
    core.migrate(() => {})
    core.migrate(() => {})
    for (let i = 0; i < 100; i++) core.ping()
    core.close()
    const check = new Database(path, { readonly: true })
    expect(check.pragma('journal_mode', { simple: true })).toBe('wal')
    expect(check.prepare(`SELECT MAX(version) AS v FROM ${TABLE.version}`).get()).toEqual({
      v: SQLITE_SCHEMA_VERSION,
    })
    check.close()
  })
})

describe('createSqliteCore group commit', () => {
  const intent = (key: string) => ({
    key,
    network: 'eip155:8453',
    amount: '1000',
    tool: 'hash',
    transport: 'http' as const,
    createdAt: 1_750_000_000_000,
    expiresAt: 1_750_000_120_000,
    question: null,
  })
  const row = (id: string, amount: string) => ({
    id,
    at: 1_750_000_000_000,
    tool: 'hash',
    transport: 'http' as const,
    network: 'eip155:8453',
    amount,
    outcome: 'settled' as const,
    payerKey: null,
  })
  const opened = (name: string) => {
    const core = createSqliteCore(join(dir, name))
    core.migrate(() => {})
    return core
  }

  it('commits each write of the group, and fails alone a write refused for its own data', () => {
    const core = opened('group.sqlite')
    const results = core.group([
      () => core.ledger.intend(intent('pay:a'), 0),
      () => core.insert([row('018f0000-0000-7000-8000-000000000001', '1000')]),
      // A negative amount breaks the events' CHECK constraint: this write alone fails.
      () => core.insert([row('018f0000-0000-7000-8000-000000000002', '-5')]),
      () => core.ledger.decide('pay:a', { outcome: 'settled', transaction: '0xab', at: 1 }),
      () => core.ledger.decide('pay:unknown', { outcome: 'settled', at: 1 }),
    ])
    expect(results.map((r) => r.ok)).toEqual([true, true, false, true, true])
    expect(results.map((r) => (r.ok ? r.value : 'error'))).toEqual([
      undefined,
      1,
      'error',
      true,
      false,
    ])
    expect(core.ledger.get('pay:a')).toMatchObject({ outcome: 'settled', transaction: '0xab' })
    core.close()
    const check = new Database(join(dir, 'group.sqlite'), { readonly: true })
    expect(check.prepare(`SELECT id, amount FROM ${TABLE.events}`).all()).toEqual([
      { id: '018f0000-0000-7000-8000-000000000001', amount: 1000 },
    ])
    check.close()
  })

  it('rolls the whole group back on a fault of the database, and every write fails with it', () => {
    const core = opened('group-fault.sqlite')
    const fault = new Database.SqliteError('disk I/O error', 'SQLITE_IOERR')
    expect(() =>
      core.group([
        () => core.ledger.intend(intent('pay:b'), 0),
        () => {
          throw fault
        },
      ]),
    ).toThrow(fault)
    // The handle was dropped and reopens: the intent of the rolled-back group is not there.
    expect(core.ledger.get('pay:b')).toBeUndefined()
    expect(core.group([() => core.ledger.intend(intent('pay:b'), 0)])).toEqual([
      { ok: true, value: undefined },
    ])
    expect(core.ledger.get('pay:b')).toMatchObject({ key: 'pay:b', outcome: null })
    core.close()
  })
})
