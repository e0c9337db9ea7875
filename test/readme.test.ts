import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { describe, expect, it } from 'vitest'
import {
  CONFIG_DEFAULTS,
  CONFIG_VARIABLES,
  DERIVED_DEFAULTS,
  loadConfig,
  QUEUE_PER_WORKER,
} from '../src/config.js'

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
      } else if (name in DERIVED_DEFAULTS) {
        expect(cell, name).toBe(DERIVED_DEFAULTS[name])
      } else {
        expect(cell, name).toBe('unset')
      }
    }
  })

  it('words the derived defaults as loadConfig computes them', () => {
    expect(DERIVED_DEFAULTS).toEqual({
      PUBLIC_BASE_URL: '`http://HOST:PORT`',
      TOOL_WORKERS: 'number of cores',
      TOOL_QUEUE_LIMIT: '2 × `TOOL_WORKERS`',
    })
    expect(QUEUE_PER_WORKER).toBe(2)
    const config = loadConfig({ HOST: '10.0.0.1', PORT: '9000' })
    expect(config.publicBaseUrl).toBe('http://10.0.0.1:9000')
    expect(config.toolWorkers).toBe(availableParallelism())
    expect(config.toolQueueLimit).toBe(2 * availableParallelism())
    expect(loadConfig({ TOOL_WORKERS: '3' }).toolQueueLimit).toBe(6)
    expect(loadConfig({ TOOL_WORKERS: '3', TOOL_QUEUE_LIMIT: '0' }).toolQueueLimit).toBe(0)
  })
})
