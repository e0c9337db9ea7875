import { existsSync } from 'node:fs'
import pg from 'pg'
import { describe, expect, it } from 'vitest'
import { createDatabase, startPrivatePostgres } from './postgres.js'

async function query(url: string, text: string): Promise<unknown[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 })
  client.on('error', () => {})
  await client.connect()
  try {
    return (await client.query(text)).rows
  } finally {
    await client.end()
  }
}

describe('startPrivatePostgres', () => {
  it('runs its own server, which stops (refusing connections) and starts again with its data', async () => {
    const server = await startPrivatePostgres()
    try {
      expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`)
      await query(server.url, 'CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)')
      await server.stop()
      expect(server.running()).toBe(false)
      await expect(query(server.url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/)
      await server.start()
      expect(await query(server.url, 'SELECT n FROM kept')).toEqual([{ n: 7 }])
    } finally {
      await server.destroy()
    }
    expect(existsSync(server.dir)).toBe(false)
    await expect(query(server.url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/)
  }, 120_000)
})

describe('createDatabase', () => {
  it('creates a fresh database on the system server and drops it', async () => {
    const db = await createDatabase(undefined, 'payload_devnet_test')
    expect(db.name).toMatch(/^payload_devnet_test_[0-9a-f]{12}$/)
    expect(db.url).toBe(`postgres://postgres@127.0.0.1:5432/${db.name}`)
    expect(await query(db.url, 'SELECT current_database() AS name')).toEqual([{ name: db.name }])
    await db.drop()
    await expect(query(db.url, 'SELECT 1')).rejects.toThrow(/does not exist/)
  })
})
