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

  it('src/receipts imports nothing of ours but tool types', () => {
    const offenders = files('receipts').flatMap((file) =>
      importedFolders(file)
        .filter((folder) => folder !== 'receipts' && folder !== 'tools')
        .map((folder) => `${relative(SRC, file)} -> ${folder}`),
    )
    expect(offenders).toEqual([])
  })
})
