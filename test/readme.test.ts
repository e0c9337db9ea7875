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
import { configuredRails } from '../src/payment/rails.js'

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
      USDC_EVM: 'per `X402_NETWORK`',
      USDC_EVM_NAME: 'per `X402_NETWORK`',
      USDC_EVM_VERSION: 'per `X402_NETWORK`',
      USDC_SOLANA: 'per `SOLANA_NETWORK`',
      SOLANA_NETWORK: 'per `X402_NETWORK`',
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

  it('gives the per-network defaults that the rails take on each stage', () => {
    const meaning = (name: string) =>
      new RegExp(`^\\| \`${name}\` \\|[^|]+\\| (.+) \\|$`, 'm').exec(table)?.[1] ?? ''
    for (const stage of ['mainnet', 'testnet'] as const) {
      const [evm, solana] = configuredRails(
        loadConfig({
          X402_NETWORK: stage,
          PAY_TO_EVM: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
          PAY_TO_SOLANA: '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4',
        }),
      )
      const on = `on ${stage}`
      expect(meaning('X402_NETWORK'), stage).toContain(`\`${evm?.network}\``)
      expect(meaning('USDC_EVM'), stage).toContain(`\`${evm?.asset}\` ${on}`)
      expect(meaning('USDC_EVM_NAME'), stage).toContain(`\`${evm?.extra.name}\` ${on}`)
      expect(meaning('USDC_EVM_VERSION'), stage).toContain(`\`${evm?.extra.version}\``)
      expect(meaning('SOLANA_NETWORK'), stage).toContain(`\`${solana?.network}\``)
      expect(meaning('USDC_SOLANA'), stage).toContain(`\`${solana?.asset}\``)
    }
  })
})
