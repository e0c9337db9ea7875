import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { type Child, spawnChild, waitFor } from './child.js'
import { freePort } from './ports.js'

/** The system PostgreSQL the tests and `npm run cluster` share (trust auth). Never stopped. */
export const SYSTEM_POSTGRES_ADMIN_URL = 'postgres://postgres@127.0.0.1:5432/postgres'

/** A database created for one run. */
export interface Database {
  /** Connection URL of the new database, for DATABASE_URL. */
  url: string
  name: string
  /** Drops the database, ending its open sessions first. Idempotent. */
  drop(): Promise<void>
}

/**
 * Creates a fresh database `<prefix>_<12 hex>` on an existing server: a clean telemetry store for
 * one run of `npm run cluster`.
 *
 * @example
 * const db = await createDatabase()
 * // DATABASE_URL = db.url … then
 * await db.drop()
 * @param adminUrl - a URL whose role may CREATE DATABASE; default {@link SYSTEM_POSTGRES_ADMIN_URL}
 * @throws the driver's error when the server is unreachable or refuses
 */
export async function createDatabase(
  adminUrl = SYSTEM_POSTGRES_ADMIN_URL,
  prefix = 'payload_cluster',
): Promise<Database> {
  const name = `${prefix}_${randomBytes(6).toString('hex')}`
  await withAdmin(adminUrl, (admin) => admin.query(`CREATE DATABASE ${name}`))
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  let dropping: Promise<void> | undefined
  return {
    url: url.toString(),
    name,
    drop() {
      // WITH (FORCE), PostgreSQL 13+: sessions of instances that are still closing are ended.
      dropping ??= withAdmin(adminUrl, async (admin) => {
        await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      })
      return dropping
    },
  }
}

async function withAdmin<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5_000 })
  await client.connect()
  try {
    return await fn(client)
  } finally {
    await client.end()
  }
}

/** A PostgreSQL server of our own, which a test may stop and start. */
export interface PrivatePostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth). */
  url: string
  port: number
  /** Directory of the cluster: data/, the socket and server.log. */
  dir: string
  running(): boolean
  /**
   * Fast shutdown (SIGINT, as `pg_ctl stop -m fast`): open sessions are ended, new connections
   * refused. Resolves once the server has exited.
   */
  stop(): Promise<void>
  /** Starts the server again on the same port and data; resolves once it accepts queries. */
  start(): Promise<void>
  /** Stops the server and deletes the cluster. Idempotent. */
  destroy(): Promise<void>
}

/** Options of {@link startPrivatePostgres}. */
export interface PrivatePostgresOptions {
  /** Directory of `initdb` and `postgres`; default the newest /usr/lib/postgresql/<v>/bin. */
  binDir?: string
  /** TCP port on 127.0.0.1; a free one by default. */
  port?: number
}

/**
 * Creates and starts a throw-away PostgreSQL cluster (`initdb` then `postgres`), so that a test
 * can stop the database without touching the shared system server. Durability is off (`fsync`,
 * `synchronous_commit`, `full_page_writes`): it holds nothing worth keeping. Run as root, both
 * programs run as the `postgres` OS user (PostgreSQL refuses root) in a temp directory it owns;
 * the socket goes there too. Takes about 4 s (initdb 3 s, start 0.6 s on a 2-core machine).
 *
 * @example
 * const db = await startPrivatePostgres()
 * await db.stop()   // the outage
 * await db.start()  // back on the same port, with its data
 * await db.destroy()
 *
 * @throws Error when no PostgreSQL binaries are found or initdb/postgres fail (with their log)
 */
export async function startPrivatePostgres(
  options: PrivatePostgresOptions = {},
): Promise<PrivatePostgres> {
  const binDir = options.binDir ?? newestPostgresBinDir()
  const port = options.port ?? (await freePort())
  const dir = mkdtempSync(join(tmpdir(), 'payload-pg-'))
  const asRoot = process.getuid?.() === 0
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
    chownSync(dir, uid, gid)
  }
  const user = asRoot ? 'postgres' : undefined
  const env = { PATH: process.env.PATH, LANG: 'C.UTF-8' }
  const log = join(dir, 'server.log')
  const initdb = spawnChild(
    join(binDir, 'initdb'),
    [
      '-D',
      join(dir, 'data'),
      '-U',
      'postgres',
      '-A',
      'trust',
      '-E',
      'UTF8',
      '--locale=C',
      '--no-sync',
    ],
    { env, logFile: log, ...(user ? { user } : {}) },
  )
  const init = await initdb.exited
  if (init.code !== 0) {
    rmSync(dir, { recursive: true, force: true })
    throw new Error(`initdb failed (${JSON.stringify(init)}): ${initdb.logTail()}`)
  }

  const url = `postgres://postgres@127.0.0.1:${port}/postgres`
  let server: Child | undefined
  const start = async () => {
    if (server?.running()) return
    const child = spawnChild(
      join(binDir, 'postgres'),
      [
        '-D',
        join(dir, 'data'),
        '-p',
        String(port),
        '-k',
        dir,
        '-c',
        'listen_addresses=127.0.0.1',
        '-c',
        'fsync=off',
        '-c',
        'synchronous_commit=off',
        '-c',
        'full_page_writes=off',
      ],
      // Fast shutdown when this process dies: sessions end, nothing waits for clients.
      { env, logFile: log, parentDeathSignal: 'SIGINT', ...(user ? { user } : {}) },
    )
    server = child
    try {
      await waitFor('private postgres', () => answers(url), {
        timeoutMs: 30_000,
        intervalMs: 100,
        alive: child.running,
      })
    } catch (error) {
      await child.stop({ signal: 'SIGQUIT', graceMs: 2_000 })
      throw new Error(`${(error as Error).message}: ${child.logTail()}`)
    }
  }
  const stop = async () => {
    await server?.stop({ signal: 'SIGINT', graceMs: 10_000 })
  }
  let destroying: Promise<void> | undefined
  try {
    await start()
  } catch (error) {
    rmSync(dir, { recursive: true, force: true })
    throw error
  }
  return {
    url,
    port,
    dir,
    running: () => server?.running() ?? false,
    stop,
    start,
    destroy() {
      destroying ??= (async () => {
        await stop()
        rmSync(dir, { recursive: true, force: true })
      })()
      return destroying
    },
  }
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1_000 })
  // A refused connection also emits 'error' on the client; the rejection below reports it.
  client.on('error', () => {})
  try {
    await client.connect()
    await client.query('SELECT 1')
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

/** The bin directory of the newest PostgreSQL under /usr/lib/postgresql (Debian's layout). */
function newestPostgresBinDir(): string {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root)
    ? readdirSync(root)
        .filter((v) => existsSync(join(root, v, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : []
  const newest = versions[0]
  if (newest === undefined) throw new Error(`no PostgreSQL with initdb under ${root}`)
  return join(root, newest, 'bin')
}
