import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { CONFIG_DEFAULTS, CONFIG_VARIABLES } from '../src/config.js'

// The README's config table must match the code: same variables, same defaults.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const table = readme.slice(readme.indexOf('| Variable | Default | Meaning |'))
const rows = new Map(
  [...table.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1], (m[2] ?? '').trim()]),
)

describe('README', () => {
  it('shows both set-up commands', () => {
    expect(readme).toContain('npm install && npm run dev')
    expect(readme).toContain('npm install && npm test')
  })

  it('lists exactly the environment variables the config reads', () => {
    expect([...rows.keys()]).toEqual(CONFIG_VARIABLES)
  })

  it('gives each variable its real default', () => {
    for (const name of CONFIG_VARIABLES) {
      const cell = rows.get(name)
      if (name in CONFIG_DEFAULTS) {
        expect(cell, name).toBe(`\`${String(CONFIG_DEFAULTS[name])}\``)
      } else if (name === 'PUBLIC_BASE_URL') {
        expect(cell).toBe('`http://HOST:PORT`')
      } else {
        expect(cell, name).toBe('unset')
      }
    }
  })
})
