import { ledgerContract } from '../../test/helpers/ledger-contract.js'
import { sqliteLedger } from '../../test/helpers/sqlite-ledger.js'

// The SQLite core, synchronous, as the store's worker thread runs it.
ledgerContract('SQLite', async () => sqliteLedger())
