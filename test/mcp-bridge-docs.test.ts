import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  BRIDGE_VARIABLES,
  DEFAULT_MAX_PER_CALL,
  DEFAULT_MAX_PER_SESSION,
} from '../clients/mcp-bridge/src/config.js'
import { SPEND_TOOL } from '../clients/mcp-bridge/src/spend-tool.js'
import { MCP_BRIDGE } from '../src/descriptions/service-info.js'

// The service's docs (llms.txt, landing quick start, README) name the bridge from MCP_BRIDGE; the
// service must not import the bridge, so this test keeps the two in step.

const bridgePackage = JSON.parse(
  readFileSync(new URL('../clients/mcp-bridge/package.json', import.meta.url), 'utf8'),
) as { name: string; bin: Record<string, string> }

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

  it("matches the README's mcpServers snippet", () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8')
    const section = readme.slice(readme.indexOf('## Use from an MCP client'))
    const snippet = /```json\n([\s\S]*?)\n```/.exec(section)?.[1] ?? '{}'
    const server = (
      JSON.parse(snippet) as {
        mcpServers: Record<string, { command: string; args: string[]; env: Record<string, string> }>
      }
    ).mcpServers['payload-tools']
    expect(server?.command).toBe('npx')
    expect(server?.args).toEqual(['-y', MCP_BRIDGE.package])
    const variables: readonly string[] = BRIDGE_VARIABLES
    for (const name of Object.keys(server?.env ?? {})) expect(variables).toContain(name)
  })
})
