import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

// The folders import only downward: http/ and mcp/ are siblings that never import each other,
// and descriptions/ (what both publish) imports neither. src/service.ts composes them.

const SRC = new URL('../src/', import.meta.url).pathname

function files(dir: string): string[] {
  return readdirSync(join(SRC, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

/** The `src/` folders a file imports from, e.g. ['payment', 'tools']. */
function importedFolders(file: string): string[] {
  const text = readFileSync(file, 'utf8')
  const folders = new Set<string>()
  for (const [, specifier] of text.matchAll(/from '(\.[^']+)'/g)) {
    const target = relative(SRC, join(file, '..', specifier as string))
    if (!target.startsWith('..')) folders.add(target.split('/')[0] as string)
  }
  return [...folders]
}

describe('layout', () => {
  it.each([
    ['http', ['mcp']],
    ['mcp', ['http']],
    ['descriptions', ['http', 'mcp']],
  ])('src/%s imports none of %j', (dir, forbidden) => {
    const offenders = files(dir).flatMap((file) =>
      importedFolders(file)
        .filter((folder) => forbidden.includes(folder))
        .map((folder) => `${relative(SRC, file)} -> ${folder}`),
    )
    expect(offenders).toEqual([])
  })

  it('src/receipts imports nothing of ours', () => {
    const offenders = files('receipts').flatMap((file) =>
      importedFolders(file)
        .filter((folder) => folder !== 'receipts')
        .map((folder) => `${relative(SRC, file)} -> ${folder}`),
    )
    expect(offenders).toEqual([])
  })
})

// Every test file in the project its name says (vitest.config.ts, README "Tests"), checked from
// what it imports and calls. The unit project refuses child processes and sockets at run time too
// (test/setup/unit.ts); this catches a misfiled file even where its tests are skipped.

const ROOT = new URL('../', import.meta.url).pathname

/** Every test file of the repository (the bridge's included), relative to the root. */
function testFiles(): string[] {
  return ['src', 'test', 'clients/mcp-bridge/src'].flatMap((dir) =>
    readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
      .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
      .map((entry) => relative(ROOT, join(entry.parentPath, entry.name))),
  )
}

/** What starts a program as a server or a container: `system` only. */
const SYSTEM_ONLY =
  /\b(?:startNginx|startPrivateRedis|startPrivatePostgres|startPrometheus|startCluster)\b|from '[^']*helpers\/podman\.js'|from 'playwright-core'/
/** What needs a process or a socket: never `unit`. */
const NOT_UNIT =
  /^import (?!type )[^;]*from '(?:node:)?(?:child_process|net|http|https|dgram)'|\b(?:startDevStack|startDevService|startService|startAnvil|startEvmDevnet|startSolanaDevnet|startFacilitatorServer|scriptedService|spawnChild)\b|^import (?!type )[^;]*from '(?:pg|ioredis)'/m

/** The project a test file's name puts it in. */
const projectOf = (file: string) =>
  file.endsWith('.system.test.ts') ? 'system' : file.endsWith('.e2e.test.ts') ? 'e2e' : 'unit'

describe('test projects', () => {
  // This file names the markers without using them.
  const files = testFiles().filter((file) => file !== 'test/layout.test.ts')

  it('finds the test files', () => {
    expect(files.length).toBeGreaterThan(100)
  })

  it('names *.system.test.ts every file that starts nginx, PostgreSQL, Redis, Prometheus, podman or Chromium', () => {
    const offenders = files.filter(
      (file) =>
        SYSTEM_ONLY.test(readFileSync(join(ROOT, file), 'utf8')) && projectOf(file) !== 'system',
    )
    expect(offenders).toEqual([])
  })

  it('keeps out of unit every file that starts a process, a server or the devnet, or opens a socket', () => {
    const offenders = files.filter(
      (file) => NOT_UNIT.test(readFileSync(join(ROOT, file), 'utf8')) && projectOf(file) === 'unit',
    )
    expect(offenders).toEqual([])
  })
})
