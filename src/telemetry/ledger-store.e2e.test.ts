import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll } from 'vitest'
import { ledgerContract } from '../../test/helpers/ledger-contract.js'
import { createTestSchema, type TestSchema } from '../../test/helpers/pg-schema.js'
import type { SettlementLedger } from './ledger.js'
import { createPostgresStore } from './postgres-store.js'
import { createTelemetry, type Telemetry } from './telemetry.js'
import type { TelemetryStore } from './types.js'

// The ledger contract on the real stores: the machine's PostgreSQL, each test in a fresh schema
// (the claim's concurrency there is real: two pooled connections, SKIP LOCKED), and the SQLite
// store through its worker thread and telemetry's facade (migrated before the first operation).
const closers: (() => Promise<void>)[] = []
afterAll(async () => {
  for (const close of closers) await close()
})

ledgerContract('PostgreSQL', async () => {
  const schema: TestSchema = await createTestSchema('ledger')
  const store: TelemetryStore = createPostgresStore(schema.url)
  closers.push(async () => {
    await store.close()
    await schema.drop()
  })
  await store.migrate()
  return store.ledger as SettlementLedger
})

ledgerContract('SQLite store, through telemetry', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ledger-store-'))
  const telemetry: Telemetry = await createTelemetry({
    databaseUrl: join(dir, 'telemetry.sqlite'),
    dataDir: dir,
    salt: 'ledger-store-test-salt',
  })
  closers.push(async () => {
    await telemetry.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return telemetry.ledger as SettlementLedger
})
