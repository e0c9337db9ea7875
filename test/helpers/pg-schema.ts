import { randomBytes } from 'node:crypto'
import pg from 'pg'

/** The shared test database (trust auth). */
export const PG_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/test'

/** A fresh PostgreSQL schema in the test database and a URL whose `search_path` selects it. */
export interface TestSchema {
  schema: string
  /** Connection URL with `options=-c search_path=<schema>`. */
  url: string
  /** Drops the schema and everything in it. */
  drop(): Promise<void>
}

/**
 * Creates a schema with a random name, so concurrent test runs never share tables.
 *
 * @param prefix - start of the schema name, letters and underscores
 */
export async function createTestSchema(prefix: string): Promise<TestSchema> {
  const schema = `${prefix}_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  try {
    await admin.query(`CREATE SCHEMA ${schema}`)
  } finally {
    await admin.end()
  }
  const options = encodeURIComponent(`-c search_path=${schema}`)
  return {
    schema,
    url: `${PG_ADMIN_URL}?options=${options}`,
    async drop() {
      const client = new pg.Client({ connectionString: PG_ADMIN_URL })
      await client.connect()
      try {
        await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
      } finally {
        await client.end()
      }
    },
  }
}
