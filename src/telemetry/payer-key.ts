import { createHmac, randomBytes } from 'node:crypto'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** File under the data directory that keeps the generated development salt. */
export const SALT_FILE_NAME = 'telemetry-salt'

/** Where the salt came from: `TELEMETRY_SALT` or a generated development file. */
export type SaltSource = 'configured' | 'generated'

/** The HMAC key used for payer keys and where it came from. */
export interface Salt {
  value: string
  source: SaltSource
}

/**
 * Resolves the payer-key salt. A configured salt wins; otherwise a development salt of 32 random
 * bytes (64 hex characters) is generated once into `<dataDir>/telemetry-salt` (mode 0600) and
 * reused on later starts. Production must set `TELEMETRY_SALT`, identical on every instance, or
 * unique-payer counts split per instance.
 *
 * The generated file's text is the salt string itself, so copying it into `TELEMETRY_SALT` keeps
 * every payer key unchanged.
 *
 * @example
 * await resolveSalt(process.env.TELEMETRY_SALT, './data') // { value: '9f…', source: 'generated' }
 * @param configured - `TELEMETRY_SALT`; empty or undefined means unset
 * @param dataDir - directory for the generated file, created when missing
 * @throws {Error} when the file cannot be read or written, or holds something other than 64 hex
 */
export async function resolveSalt(configured: string | undefined, dataDir: string): Promise<Salt> {
  if (configured) return { value: configured, source: 'configured' }
  const path = join(dataDir, SALT_FILE_NAME)
  await mkdir(dataDir, { recursive: true })
  const fresh = randomBytes(32).toString('hex')
  try {
    // 'wx' fails when the file exists, so two processes starting together keep one salt.
    await writeFile(path, `${fresh}\n`, { flag: 'wx', mode: 0o600 })
    return { value: fresh, source: 'generated' }
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  const stored = (await readFile(path, 'utf8')).trim()
  if (!/^[0-9a-f]{64}$/.test(stored)) {
    throw new Error(`${path} must hold 64 hex characters; delete it or set TELEMETRY_SALT`)
  }
  return { value: stored, source: 'generated' }
}

/**
 * Pseudonymous payer key: HMAC-SHA-256 keyed with the salt (UTF-8) over the lower-cased address
 * (RFC 2104), as lower-case hex. Lower-casing makes EVM checksum spellings of one address agree.
 *
 * @example
 * payerKey('salt', '0xAb58…aeC9B') === payerKey('salt', '0xab58…aec9b') // true
 * @returns 64 hex characters
 */
export function payerKey(salt: string, address: string): string {
  return createHmac('sha256', salt).update(address.toLowerCase(), 'utf8').digest('hex')
}
