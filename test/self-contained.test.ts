import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'

// A clone of the repository is all a user has: no code, test or script may read a file outside
// it (as test/json-schema-suite.test.ts once read the test data of the folder beside the clone).

const ROOT = new URL('../', import.meta.url).pathname
const DIRS = ['src', 'test', 'bench', 'scripts', 'clients/mcp-bridge/src', '.ci']
const SELF = relative(ROOT, new URL(import.meta.url).pathname)

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && !entry.parentPath.includes('fixtures'))
    .map((entry) => relative(ROOT, join(entry.parentPath, entry.name)))
    .filter((file) => file !== SELF && !/\.(json|png|svg|css|html)$/.test(file))
}

describe('self-contained', () => {
  it('no source reads the shared folder beside the repository', () => {
    const offenders = DIRS.flatMap(sources).filter((file) =>
      /(?:\.\.\/)+shared\/|\/work\/shared\b/.test(readFileSync(join(ROOT, file), 'utf8')),
    )
    expect(offenders).toEqual([])
  })

  it('carries the JSON-Schema-Test-Suite it runs, with its licence', () => {
    const suite = join(ROOT, 'test/fixtures/json-schema-test-suite')
    expect(readFileSync(join(suite, 'LICENSE'), 'utf8')).toMatch(
      /^Copyright \(c\) 2012 Julian Berman/,
    )
    const files = readdirSync(join(suite, 'tests/draft2020-12')).filter((f) => f.endsWith('.json'))
    expect(files).toHaveLength(46)
  })
})
