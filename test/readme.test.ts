import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { describe, expect, it } from 'vitest'
import { CONFIG_DEFAULTS, CONFIG_VARIABLES, DERIVED_DEFAULTS, loadConfig } from '../src/config.js'
import { configuredRails } from '../src/payment/rails.js'

// The README's config table must match the code: same variables, same defaults.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const table = readme.slice(readme.indexOf('| Variable | Default | Meaning |'))
const rows = new Map(
  [...table.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1], (m[2] ?? '').trim()]),
)

describe('README', () => {
  it('puts the happy path first: set up, a first paid call, MCP, then where to go next', () => {
    const lines = readme.split('\n')
    const headings = lines.flatMap((line, i) => (line.startsWith('## ') ? [[line, i + 1]] : []))
    expect(headings.map(([h]) => h)).toEqual([
      '## Set up',
      '## Your first paid call',
      '## Use from an MCP client',
      '## Where to go next',
      '## Configuration',
    ])
    // The links of "Where to go next" end within the first 80 lines (issue 33); the rest is
    // reference.
    expect(headings[4]?.[1]).toBeLessThanOrEqual(82)
    for (const [, target] of readme.matchAll(/\]\((docs\/[\w-]+\.md)[#)]/g)) {
      expect(() => readFileSync(new URL(`../${target}`, import.meta.url)), target).not.toThrow()
    }
  })

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
    // The README's words, read as a user would, against what loadConfig does.
    expect(rows.get('PUBLIC_BASE_URL')).toBe('`http://HOST:PORT`')
    expect(loadConfig({ HOST: '10.0.0.1', PORT: '9000' }).publicBaseUrl).toBe(
      'http://10.0.0.1:9000',
    )
    expect(rows.get('TOOL_WORKERS')).toBe('number of cores')
    expect(loadConfig({}).toolWorkers).toBe(availableParallelism())
    const perWorker = Number(
      /^(\d+) × `TOOL_WORKERS`$/.exec(rows.get('TOOL_QUEUE_LIMIT') ?? '')?.[1],
    )
    expect(perWorker).toBeGreaterThan(0)
    expect(loadConfig({}).toolQueueLimit).toBe(perWorker * availableParallelism())
    expect(loadConfig({ TOOL_WORKERS: '3' }).toolQueueLimit).toBe(perWorker * 3)
    expect(loadConfig({ TOOL_WORKERS: '3', TOOL_QUEUE_LIMIT: '0' }).toolQueueLimit).toBe(0)
    expect(rows.get('BATCH_SETTLEMENT')).toBe('`on` when `PAY_TO_EVM` is set')
    expect(
      loadConfig({ PAY_TO_EVM: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8' }).batchSettlement
        .enabled,
    ).toBe(true)
    expect(loadConfig({}).batchSettlement.enabled).toBe(false)
    expect(
      loadConfig({
        PAY_TO_EVM: '0x70997970C51812dc3A010C7d01b50e0d17dc79C8',
        BATCH_SETTLEMENT: 'off',
      }).batchSettlement.enabled,
    ).toBe(false)
    expect(rows.get('BATCH_SETTLEMENT_MIN_DEPOSIT')).toBe('`1`')
    expect(loadConfig({}).batchSettlement.minDeposit).toBe('1000000')
    // The per-network ones: the next test.
    for (const name of ['USDC_EVM', 'USDC_EVM_NAME', 'USDC_EVM_VERSION', 'SOLANA_NETWORK']) {
      expect(rows.get(name), name).toBe('per `X402_NETWORK`')
    }
    expect(rows.get('USDC_SOLANA')).toBe('per `SOLANA_NETWORK`')
    const perClient = Number(
      /^`(\d+)`; `0` when `TRUST_PROXY_HOPS` > 0$/.exec(
        rows.get('MAX_CONNECTIONS_PER_CLIENT') ?? '',
      )?.[1],
    )
    expect(perClient).toBeGreaterThan(0)
    expect(loadConfig({}).maxConnectionsPerClient).toBe(perClient)
    expect(loadConfig({ TRUST_PROXY_HOPS: '1' }).maxConnectionsPerClient).toBe(0)
    expect(
      loadConfig({ TRUST_PROXY_HOPS: '1', MAX_CONNECTIONS_PER_CLIENT: '32' })
        .maxConnectionsPerClient,
    ).toBe(32)
    expect(loadConfig({ MAX_CONNECTIONS_PER_CLIENT: '0' }).maxConnectionsPerClient).toBe(0)
    // Never above MAX_CONNECTIONS: the default follows it, a setting above it is refused.
    expect(loadConfig({ MAX_CONNECTIONS: '16' }).maxConnectionsPerClient).toBe(16)
    expect(() => loadConfig({ MAX_CONNECTIONS: '16', MAX_CONNECTIONS_PER_CLIENT: '17' })).toThrow(
      'MAX_CONNECTIONS_PER_CLIENT: 17 exceeds MAX_CONNECTIONS (16); set it at most that, or 0 for no cap per client',
    )
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
