import Database from 'better-sqlite3'
import pg from 'pg'
import type { EventRow } from '../../src/telemetry/types.js'
import { createV1Postgres, createV1Sqlite } from './telemetry-v1.js'

// Telemetry schema version 3 frozen as it shipped (commit 7248e04): a version-1 store (see
// telemetry-v1.ts) upgraded by version-3 code, which added the rollups (version 2), built them
// from the events with its backfill queries, and added the settlement ledger (version 3). The
// migration test builds real version-3 stores with it and upgrades them with the current code.
// Do not "fix" this file to follow the current code: it is the old code.

/** Version-2 DDL of the SQLite backend, verbatim. */
const V2_SQLITE_DDL = `
  CREATE TABLE usage_hourly (
    outcome TEXT NOT NULL,
    hour INTEGER NOT NULL,
    network TEXT NOT NULL,
    tool TEXT NOT NULL,
    transport TEXT NOT NULL,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (outcome, hour, network, tool, transport)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE settled_hourly (
    hour INTEGER PRIMARY KEY,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL
  ) STRICT;
  CREATE TABLE usage_totals (
    metric TEXT NOT NULL,
    item TEXT NOT NULL,
    calls INTEGER NOT NULL,
    amount INTEGER NOT NULL,
    PRIMARY KEY (metric, item)
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE payers (
    payer_key TEXT PRIMARY KEY,
    settled_calls INTEGER NOT NULL,
    first_at INTEGER NOT NULL,
    last_at INTEGER NOT NULL
  ) STRICT, WITHOUT ROWID;
  CREATE TABLE telemetry_retention (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    pruned_before INTEGER NOT NULL
  ) STRICT;
  INSERT INTO telemetry_retention (id, pruned_before) VALUES (1, 0);
  DROP INDEX IF EXISTS payment_events_outcome_payer;
  DROP INDEX IF EXISTS payment_events_outcome_at;
  DROP INDEX IF EXISTS payment_events_outcome_network;
  DROP INDEX IF EXISTS payment_events_outcome_tool;
  CREATE INDEX payment_events_at ON payment_events (at);`

/** Version-2 DDL of the PostgreSQL backend, verbatim. */
const V2_POSTGRES_DDL = `
  CREATE TABLE usage_hourly (
    outcome text NOT NULL,
    hour bigint NOT NULL,
    network text NOT NULL,
    tool text NOT NULL,
    transport text NOT NULL,
    calls bigint NOT NULL,
    amount bigint NOT NULL,
    PRIMARY KEY (outcome, hour, network, tool, transport)
  );
  CREATE TABLE settled_hourly (
    hour bigint PRIMARY KEY,
    calls bigint NOT NULL,
    amount bigint NOT NULL
  );
  CREATE TABLE usage_totals (
    metric text NOT NULL,
    item text NOT NULL,
    calls bigint NOT NULL,
    amount bigint NOT NULL,
    PRIMARY KEY (metric, item)
  );
  CREATE TABLE payers (
    payer_key text PRIMARY KEY,
    settled_calls bigint NOT NULL,
    first_at bigint NOT NULL,
    last_at bigint NOT NULL
  );
  CREATE TABLE telemetry_retention (
    id integer PRIMARY KEY CHECK (id = 1),
    pruned_before bigint NOT NULL
  );
  INSERT INTO telemetry_retention (id, pruned_before) VALUES (1, 0);
  DROP INDEX IF EXISTS payment_events_outcome_payer;
  DROP INDEX IF EXISTS payment_events_outcome_at;
  DROP INDEX IF EXISTS payment_events_outcome_network;
  DROP INDEX IF EXISTS payment_events_outcome_tool;
  CREATE INDEX payment_events_at ON payment_events (at);`

/** The version-2 backfill over every event (one batch), verbatim; the same on both backends. */
const V2_BACKFILL_SQL = `
  INSERT INTO usage_hourly (outcome, hour, network, tool, transport, calls, amount)
    SELECT outcome, at / 3600000 AS hour, network, tool, transport,
      COUNT(*) AS calls, SUM(amount) AS amount
    FROM payment_events WHERE true
    GROUP BY outcome, at / 3600000, network, tool, transport;
  INSERT INTO payers (payer_key, settled_calls, first_at, last_at)
    SELECT payer_key, COUNT(*) AS settled_calls, MIN(at) AS first_at, MAX(at) AS last_at
    FROM payment_events
    WHERE outcome = 'settled' AND payer_key IS NOT NULL AND (true)
    GROUP BY payer_key;
  INSERT INTO settled_hourly (hour, calls, amount)
    SELECT hour, calls, amount FROM (
      SELECT hour, SUM(calls) AS calls, SUM(amount) AS amount FROM usage_hourly
      WHERE outcome = 'settled' GROUP BY hour) AS derived;
  INSERT INTO usage_totals (metric, item, calls, amount)
    SELECT metric, item, calls, amount FROM (
      SELECT 'outcome' AS metric, outcome AS item, SUM(calls) AS calls, SUM(amount) AS amount
        FROM usage_hourly GROUP BY outcome
      UNION ALL
      SELECT 'settled_network', network, SUM(calls), SUM(amount)
        FROM usage_hourly WHERE outcome = 'settled' GROUP BY network
      UNION ALL
      SELECT 'settled_tool', tool, SUM(calls), SUM(amount)
        FROM usage_hourly WHERE outcome = 'settled' GROUP BY tool
      UNION ALL
      SELECT 'payers', 'unique', COUNT(*), 0 FROM payers
      UNION ALL
      SELECT 'payers', 'repeat', COUNT(*), 0
        FROM payers WHERE settled_calls >= 2
      UNION ALL
      SELECT 'payers', 'settled_with_payer', COALESCE(SUM(settled_calls), 0), 0
        FROM payers) AS derived;`

/** Version-3 DDL (the settlement ledger) of the SQLite backend, verbatim. */
const V3_SQLITE_DDL = `CREATE TABLE settlement_intents (
    payment_key TEXT PRIMARY KEY,
    network TEXT NOT NULL,
    amount INTEGER NOT NULL CHECK (amount >= 0),
    tool TEXT NOT NULL,
    transport TEXT NOT NULL CHECK (transport IN ('http', 'mcp')),
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL,
    question TEXT,
    outcome TEXT CHECK (outcome IN ('settled', 'failed', 'landed', 'not_landed')),
    tx TEXT,
    decided_at INTEGER,
    claimed_until INTEGER NOT NULL
  ) STRICT;
  CREATE INDEX settlement_intents_open ON settlement_intents (created_at) WHERE outcome IS NULL;`

/** Version-3 DDL (the settlement ledger) of the PostgreSQL backend, verbatim. */
const V3_POSTGRES_DDL = `CREATE TABLE settlement_intents (
    payment_key text PRIMARY KEY,
    network text NOT NULL,
    amount bigint NOT NULL CHECK (amount >= 0),
    tool text NOT NULL,
    transport text NOT NULL CHECK (transport IN ('http', 'mcp')),
    created_at bigint NOT NULL,
    expires_at bigint NOT NULL,
    question text,
    outcome text CHECK (outcome IN ('settled', 'failed', 'landed', 'not_landed')),
    tx text,
    decided_at bigint,
    claimed_until bigint NOT NULL
  );
  CREATE INDEX settlement_intents_open ON settlement_intents (created_at) WHERE outcome IS NULL;`

/**
 * Builds a version-3 SQLite store at `path` holding `rows` (which must carry no scheme: version 3
 * had none), its rollups built by version 3's backfill.
 */
export function createV3Sqlite(path: string, rows: readonly EventRow[]): void {
  createV1Sqlite(path, rows)
  const db = new Database(path)
  try {
    db.transaction(() => {
      db.exec(V2_SQLITE_DDL)
      db.exec(V2_BACKFILL_SQL)
      db.exec(V3_SQLITE_DDL)
      db.exec('INSERT INTO telemetry_schema_version (version) VALUES (2), (3)')
    })()
  } finally {
    db.close()
  }
}

/** Builds a version-3 PostgreSQL store in the connection's `search_path`; see {@link createV3Sqlite}. */
export async function createV3Postgres(url: string, rows: readonly EventRow[]): Promise<void> {
  await createV1Postgres(url, rows)
  const client = new pg.Client({ connectionString: url })
  await client.connect()
  try {
    await client.query('BEGIN')
    await client.query(V2_POSTGRES_DDL)
    await client.query(V2_BACKFILL_SQL)
    await client.query(V3_POSTGRES_DDL)
    await client.query('INSERT INTO telemetry_schema_version (version) VALUES (2), (3)')
    await client.query('COMMIT')
  } finally {
    await client.end()
  }
}
