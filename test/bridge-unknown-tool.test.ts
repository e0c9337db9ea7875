import { describe, expect, it } from 'vitest'
import { UnknownToolError as BridgeUnknownTool } from '../clients/mcp-bridge/src/unknown-tool.js'
import { UnknownToolError } from '../src/mcp/unknown-tool.js'
import { catalog } from '../src/tools/catalog.js'

// The bridge (which imports nothing of the service) keeps a copy of the service's unknown-tool
// error: both must answer a mistyped name alike.

const names = [...catalog.map((t) => t.mcpName), 'payload_tools_spend']

describe('the bridge and the service answer an unknown tool alike', () => {
  it.each([
    'payload_hsah',
    'payload_base46',
    'payload_tools_sepnd',
    'weather',
    '',
    'x'.repeat(500),
  ])('%s', (name) => {
    const service = new UnknownToolError(name, names)
    const bridge = new BridgeUnknownTool(name, names)
    expect([bridge.code, bridge.message, bridge.data]).toEqual([
      service.code,
      service.message,
      service.data,
    ])
  })
})
