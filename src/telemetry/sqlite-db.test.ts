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
