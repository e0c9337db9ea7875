import { readFileSync } from 'node:fs'
import { MAINNET_RPC_URL } from '@x402/svm'
import { describe, expect, it } from 'vitest'
import { BRIDGE_VARIABLES, DEFAULT_MAX_PER_CALL, DEFAULT_MAX_PER_SESSION } from './config.js'
import { USAGE } from './usage.js'

// The README's configuration table must match the code: same variables, same defaults.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const table = readme.slice(readme.indexOf('| Variable | Default | Meaning |'))
const rows = new Map(
  [...table.matchAll(/^\| `([A-Z0-9_]+)` \| ([^|]+) \|/gm)].map((m) => [m[1], (m[2] ?? '').trim()]),
)

describe('README', () => {
  it('lists exactly the environment variables the bridge reads, as the usage does', () => {
    expect([...rows.keys()]).toEqual([...BRIDGE_VARIABLES])
    for (const name of BRIDGE_VARIABLES) expect(USAGE).toContain(name)
  })

  it('gives the real defaults', () => {
    expect(rows.get('PAYLOAD_TOOLS_URL')).toBe('none: required')
    expect(rows.get('SOLANA_RPC_URL')).toBe(`\`${MAINNET_RPC_URL}\``)
    expect(rows.get('MAX_USDC_PER_CALL')).toBe(`\`${DEFAULT_MAX_PER_CALL}\``)
    expect(rows.get('MAX_USDC_PER_SESSION')).toBe(`\`${DEFAULT_MAX_PER_SESSION}\``)
    for (const name of [
      'PAYER_PRIVATE_KEY',
      'PAYER_SOLANA_SECRET_KEY',
      'PAYER_RAIL',
      'MAX_USDC_PER_DAY',
    ]) {
      expect(rows.get(name), name).toBe('unset')
    }
  })

  it('has the mcpServers snippet with command, args and env', () => {
    const snippet = /```json\n(\{\n {2}"mcpServers"[\s\S]*?)\n```/.exec(readme)?.[1]
    const parsed = JSON.parse(snippet ?? '{}') as {
      mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>
    }
    const server = parsed.mcpServers['payload-tools']
    expect(server?.command).toBe('npx')
    expect(server?.args).toEqual(['-y', 'payload-tools-mcp'])
    for (const name of Object.keys(server?.env ?? {})) {
      expect(BRIDGE_VARIABLES as readonly string[]).toContain(name)
    }
  })
})
