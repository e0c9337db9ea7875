import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'
import { createTelemetryStore } from './store.js'
import type { TelemetryStore } from './types.js'

describe('createTelemetryStore', () => {
  const dirs: string[] = []
  const stores: TelemetryStore[] = []
  const tempDir = () => {
    const dir = mkdtempSync(join(tmpdir(), 'telemetry-store-'))
    dirs.push(dir)
    return dir
  }
  const make = (url: string | undefined, dataDir?: string) => {
    const store = createTelemetryStore(url, { dataDir })
    stores.push(store)
    return store
  }
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((s) => s.close()))
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
  })

  it('defaults to SQLite at <dataDir>/telemetry.sqlite, creating the directory', async () => {
    const dataDir = join(tempDir(), 'nested', 'data')
    const store = make(undefined, dataDir)
    expect(store.backend).toBe('sqlite')
    expect(existsSync(dataDir)).toBe(false)
    await store.migrate()
    expect(existsSync(join(dataDir, 'telemetry.sqlite'))).toBe(true)
  })

  it('treats an empty DATABASE_URL as unset', () => {
    expect(make('', tempDir()).backend).toBe('sqlite')
  })

  it('opens SQLite at a plain path or a file: URL', async () => {
    const dir = tempDir()
    const plain = make(join(dir, 'a.db'))
    const url = make(pathToFileURL(join(dir, 'b.db')).href)
    await plain.migrate()
    await url.migrate()
    expect([plain.backend, url.backend]).toEqual(['sqlite', 'sqlite'])
    expect([existsSync(join(dir, 'a.db')), existsSync(join(dir, 'b.db'))]).toEqual([true, true])
  })

  it('selects PostgreSQL for postgres:// and postgresql:// without connecting', () => {
    expect(make('postgres://u@127.0.0.1:1/db').backend).toBe('postgres')
    expect(make('PostgreSQL://u@127.0.0.1:1/db').backend).toBe('postgres')
  })

  it('rejects other schemes without echoing the URL', () => {
    expect(() => createTelemetryStore('mysql://root:hunter2@db/x')).toThrow(
      'DATABASE_URL: unsupported scheme "mysql"; use postgres:// or a file path',
    )
  })
})
