import { afterAll } from 'vitest'
import { ledgerContract } from '../../test/helpers/ledger-contract.js'
import { createTestSchema, type TestSchema } from '../../test/helpers/pg-schema.js'
import type { SettlementLedger } from './ledger.js'
import { createPostgresStore } from './postgres-store.js'
import type { TelemetryStore } from './types.js'

// The same contract on the machine's PostgreSQL, each test in a fresh schema; the claim's
// concurrency there is real (two pooled connections, SKIP LOCKED).
const opened: { schema: TestSchema; store: TelemetryStore }[] = []
afterAll(async () => {
  for (const { schema, store } of opened) {
    await store.close()
    await schema.drop()
  }
})

ledgerContract('PostgreSQL', async () => {
  const schema = await createTestSchema('ledger')
  const store = createPostgresStore(schema.url)
  opened.push({ schema, store })
  await store.migrate()
  return store.ledger as SettlementLedger
})
