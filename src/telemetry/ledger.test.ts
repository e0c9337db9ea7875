import { ledgerContract } from '../../test/helpers/ledger-contract.js'
import type { SettlementLedger } from './ledger.js'
import { createSqliteCore } from './sqlite-db.js'

// The SQLite core, synchronous, as the store's worker thread runs it.
ledgerContract('SQLite', async () => {
  const core = createSqliteCore(':memory:')
  core.migrate(() => {})
  const l = core.ledger
  const ledger: SettlementLedger = {
    intend: async (i, hold) => l.intend(i, hold),
    decide: async (k, d) => l.decide(k, d),
    forget: async (k) => l.forget(k),
    claim: async (c) => l.claim(c),
    unresolved: async (b) => l.unresolved(b),
    get: async (k) => l.get(k),
  }
  return ledger
})
