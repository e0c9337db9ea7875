import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

// The folders import only downward (docs/architecture.md, DESIGN.md): the leaves import
// nothing of ours but the logger (the runner also the JSON bounds of src/json-bounds.ts, which
// import nothing), descriptions/ publishes what is below it, http/ and mcp/ are
// sibling adapters that never import each other, and src/service.ts composes them. A test file
// may reach further (fakes, the devnet), so the rules on leaves apply to the sources alone.

const SRC = new URL('../src/', import.meta.url).pathname

function files(dir: string): string[] {
  return readdirSync(join(SRC, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => join(entry.parentPath, entry.name))
}

const sources = (dir: string) => files(dir).filter((file) => !file.endsWith('.test.ts'))

/** What a file imports of ours: the `src/` folder or top-level module, e.g. 'tools' or 'logger'. */
function imports(file: string): { target: string; typeOnly: boolean }[] {
  const text = readFileSync(file, 'utf8')
  const found: { target: string; typeOnly: boolean }[] = []
  for (const [, type, specifier] of text.matchAll(
    /(?:^|\n)(?:import|export)\s+(type\s+)?[^'";]*?from '(\.[^']+)'/g,
  )) {
    const target = relative(SRC, join(file, '..', specifier as string))
    if (target.startsWith('..')) continue
    found.push({ target: (target.split('/')[0] as string).replace(/\.js$/, ''), typeOnly: !!type })
  }
  return found
}

/** `<file> -> <target>` for each import of `files` whose target `bad` picks. */
function offenders(list: string[], bad: (target: string, typeOnly: boolean) => boolean): string[] {
  return list.flatMap((file) => {
    const own = relative(SRC, file).split('/')[0]
    return imports(file)
      .filter(({ target, typeOnly }) => target !== own && bad(target, typeOnly))
      .map(({ target }) => `${relative(SRC, file)} -> ${target}`)
  })
}

describe('layout', () => {
  it('reads the imports it judges', () => {
    // The parser above, on known files: a regression here would make every rule pass vacuously.
    expect(imports(join(SRC, 'http/receipts.ts')).map((i) => i.target)).toEqual(
      expect.arrayContaining(['payment', 'receipts', 'runner', 'tools']),
    )
    expect(imports(join(SRC, 'receipts/verification.ts'))).toContainEqual({
      target: 'tools',
      typeOnly: true,
    })
  })

  it.each([
    ['tools', [], files],
    ['metrics', [], files],
    ['facilitators', ['logger'], sources],
    ['telemetry', ['logger'], sources],
    ['runner', ['tools', 'logger', 'json-bounds'], sources],
    ['receipts', ['tools', 'logger'], files],
    ['descriptions', ['tools', 'receipts'], files],
    ['channels', ['logger', 'config', 'facilitators'], sources],
  ] as const)('src/%s imports nothing of ours but %j', (dir, allowed, pick) => {
    expect(
      offenders(pick(dir), (target) => !(allowed as readonly string[]).includes(target)),
    ).toEqual([])
  })

  it('src/receipts takes only types from the tools', () => {
    expect(
      offenders(files('receipts'), (target, typeOnly) => target === 'tools' && !typeOnly),
    ).toEqual([])
  })

  it.each([
    ['http', ['mcp']],
    ['mcp', ['http']],
    ['failures', ['http', 'mcp']],
    ['payment', ['http', 'mcp', 'failures', 'descriptions']],
  ])('src/%s imports none of %j', (dir, forbidden) => {
    expect(offenders(files(dir), (target) => forbidden.includes(target))).toEqual([])
  })

  it('only the devnet and tests know that a chain is local', () => {
    const outside = readdirSync(SRC, { withFileTypes: true })
      .filter((entry) => entry.name !== 'devnet')
      .flatMap((entry) =>
        entry.isDirectory()
          ? sources(entry.name)
          : entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')
            ? [join(SRC, entry.name)]
            : [],
      )
    expect(offenders(outside, (target) => target === 'devnet')).toEqual([])
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
