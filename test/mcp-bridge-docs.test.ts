import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  BRIDGE_VARIABLES,
  DEFAULT_MAX_PER_CALL,
  DEFAULT_MAX_PER_SESSION,
} from '../clients/mcp-bridge/src/config.js'
import { SPEND_TOOL } from '../clients/mcp-bridge/src/spend-tool.js'
import { bridgeLaunch, MCP_BRIDGE } from '../src/descriptions/service-info.js'

// The service's docs (llms.txt, landing quick start, README) name the bridge from MCP_BRIDGE; the
// service must not import the bridge, so this test keeps the two in step.

const bridgePackage = JSON.parse(
  readFileSync(new URL('../clients/mcp-bridge/package.json', import.meta.url), 'utf8'),
) as { name: string; version: string; bin: Record<string, string> }

describe('MCP_BRIDGE', () => {
  it('names the package, its bin, variables, caps and spend tool as the bridge has them', () => {
    expect(MCP_BRIDGE.package).toBe(bridgePackage.name)
    expect(Object.keys(bridgePackage.bin)).toEqual([MCP_BRIDGE.package])
    const variables: readonly string[] = BRIDGE_VARIABLES
    for (const name of [
      MCP_BRIDGE.urlVariable,
      MCP_BRIDGE.evmKeyVariable,
      MCP_BRIDGE.solanaKeyVariable,
      ...Object.keys(MCP_BRIDGE.caps),
    ]) {
      expect(variables).toContain(name)
    }
    expect(MCP_BRIDGE.caps).toEqual({
      MAX_USDC_PER_CALL: DEFAULT_MAX_PER_CALL,
      MAX_USDC_PER_SESSION: DEFAULT_MAX_PER_SESSION,
      MAX_USDC_PER_DAY: undefined,
    })
    expect(MCP_BRIDGE.spendTool).toBe(SPEND_TOOL)
  })

  it('names the bin of a clone and the tarball npm pack writes, as the package has them', () => {
    expect(MCP_BRIDGE.cloneBin).toBe(`clients/mcp-bridge/${bridgePackage.bin[bridgePackage.name]}`)
    expect(MCP_BRIDGE.tarball).toBe(`${bridgePackage.name}-${bridgePackage.version}.tgz`)
    // `npm view payload-tools-mcp` answers 404: until it is published, no snippet may use npx.
    expect(MCP_BRIDGE.published).toBe(false)
    expect(bridgeLaunch('/x')).toEqual({
      command: 'node',
      args: ['/x/clients/mcp-bridge/dist/bin.js'],
    })
  })

  it("matches the README's mcpServers snippet", () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Use from an MCP client'))
    const snippet = /```json\n([\s\S]*?)\n```/.exec(section)?.[1] ?? '{}'
    const server = (
      JSON.parse(snippet) as {
        mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>
      }
    ).mcpServers['payload-tools']
    expect(server).toMatchObject(bridgeLaunch())
    expect(section).toContain(
      `\`npm pack -w ${MCP_BRIDGE.package}\` writes\n\`${MCP_BRIDGE.tarball}\``,
    )
    expect(section).toContain(
      `After publication on npm, the entry becomes \`"command": "npx",\n"args": ["-y", "${MCP_BRIDGE.package}"]\``,
    )
    const variables: readonly string[] = BRIDGE_VARIABLES
    for (const name of Object.keys(server?.env ?? {})) expect(variables).toContain(name)
  })
})
