import { readFileSync } from 'node:fs'
import { MAINNET_RPC_URL } from '@x402/svm'
import { describe, expect, it } from 'vitest'
import { BASE_MAINNET_RPC_URL } from './channels.js'
import {
  BRIDGE_VARIABLES,
  DEFAULT_MAX_DEPOSIT,
  DEFAULT_MAX_PER_CALL,
  DEFAULT_MAX_PER_SESSION,
} from './config.js'
import { MAX_RETRY_AFTER_SECONDS } from './rate-limit.js'
import { USAGE } from './usage.js'

// The README must match the code: the configuration table (same variables, same defaults), the
// mcpServers snippets (the built bin, the tarball npm pack writes), the release facts.

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  name: string
  version: string
  license: string
  bin: Record<string, string>
  files: string[]
  engines: { node: string }
}
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
    expect(rows.get('MAX_USDC_DEPOSIT')).toBe(`\`${DEFAULT_MAX_DEPOSIT}\``)
    expect(rows.get('BASE_RPC_URL')).toBe(`\`${BASE_MAINNET_RPC_URL}\``)
    for (const name of [
      'PAYER_PRIVATE_KEY',
      'PAYER_SOLANA_SECRET_KEY',
      'PAYER_RAIL',
      'MAX_USDC_PER_DAY',
    ]) {
      expect(rows.get(name), name).toBe('unset')
    }
  })

  it('has the mcpServers snippet that works before publication: node on the bin of a clone', () => {
    const snippet = /```json\n(\{\n {2}"mcpServers"[\s\S]*?)\n```/.exec(readme)?.[1]
    const parsed = JSON.parse(snippet ?? '{}') as {
      mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>
    }
    const server = parsed.mcpServers['payload-tools']
    expect(server?.command).toBe('node')
    expect(server?.args).toEqual([`/path/to/payload-tools/clients/mcp-bridge/${pkg.bin[pkg.name]}`])
    for (const name of Object.keys(server?.env ?? {})) {
      expect(BRIDGE_VARIABLES as readonly string[]).toContain(name)
    }
  })

  it('gives the tarball forms with the name npm pack writes, and npx only after publication', () => {
    const tarball = `${pkg.name}-${pkg.version}.tgz`
    expect(readme).toContain(
      `\`npm pack -w ${pkg.name}\` builds the bridge and\nwrites \`${tarball}\``,
    )
    expect(readme).toContain(`(\`npm install -g ./${tarball}\`)`)
    expect(readme).toContain(`"args": ["-y", "file:/absolute/path/to/${tarball}"]`)
    const published = readme.indexOf('After publication on npm:')
    expect(published).toBeGreaterThan(readme.indexOf('## Use from an MCP client'))
    expect(readme.slice(published)).toMatch(
      /^After publication on npm:\n\n```json\n"command": "npx",\n"args": \["-y", "payload-tools-mcp"\]\n```/,
    )
  })

  it('documents the release with the version and license of package.json', () => {
    const release = readme.slice(readme.indexOf('## Release'))
    expect(release).toContain(`\`${pkg.name}\`, version \`${pkg.version}\``)
    expect(release).toContain(`license \`${pkg.license}\``)
    expect(release).toContain(`\`npm publish -w ${pkg.name} --access public\``)
    expect(pkg.files).toEqual(['dist', 'README.md'])
    expect(pkg.engines.node).toMatch(/^>=\d+/)
  })

  it('documents the Retry-After bound the bridge uses, and the rate_limited code', () => {
    expect(readme).toContain(
      `When \`Retry-After\` is at most ${MAX_RETRY_AFTER_SECONDS} seconds (\`MAX_RETRY_AFTER_SECONDS\` in\n\`src/rate-limit.ts\`)`,
    )
    expect(readme).toMatch(/^\| `rate_limited` \| .+ \| no \|$/m)
  })
})
