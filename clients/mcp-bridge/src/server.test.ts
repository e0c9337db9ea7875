import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { afterEach, describe, expect, it } from 'vitest'
import { createBridge } from './bridge.js'
import { SpendLedger } from './ledger.js'
import { createReceiptChecker } from './receipts.js'
import { createBridgeServer } from './server.js'
import { fakeRemote, listedTool, RECEIPT_KEYS } from './test-support/fake-remote.js'
import { TEST_EVM_KEY } from './test-support/offers.js'
import { createWallet } from './wallet.js'

const cleanup: (() => Promise<void>)[] = []
afterEach(async () => {
  for (const fn of cleanup.splice(0)) await fn()
})

/** The bridge server over the fake service, connected to the official Client in memory. */
async function connected(retryMs: number) {
  const remote = fakeRemote([listedTool('payload_hash', '1000')])
  const wallet = await createWallet({
    evmPrivateKey: TEST_EVM_KEY,
    solanaRpcUrl: 'http://127.0.0.1:1',
    perCallCap: 10_000n,
  })
  const ledger = new SpendLedger({ perCall: 10_000n, perSession: 100_000n }, undefined)
  const logs: string[] = []
  const log = (m: string) => logs.push(m)
  const receipts = createReceiptChecker({ serviceUrl: 'https://tools.example', keys: RECEIPT_KEYS })
  const bridge = createBridge({ remote, wallet, ledger, log, receipts })
  const bridgeServer = createBridgeServer(bridge, {
    serviceUrl: 'https://tools.example',
    log,
    retryMs,
  })
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'server-test', version: '1' })
  const changed: unknown[] = []
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => {
    changed.push(n)
  })
  await bridgeServer.server.connect(serverSide)
  await client.connect(clientSide)
  cleanup.push(async () => {
    await client.close()
    await bridgeServer.close()
  })
  return { remote, client, bridgeServer, changed, logs }
}

describe('createBridgeServer', () => {
  it('serves the mirrored listing and the paid call over MCP', async () => {
    const { client } = await connected(10)
    const instructions = client.getInstructions()
    expect(instructions).toMatch(
      /^A local bridge to the Payload Tools service at https:\/\/tools\.example/,
    )
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true })
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['payload_hash', 'payload_tools_spend'])
    const result = await client.callTool({ name: 'payload_hash', arguments: { input: 'abc' } })
    expect(result.structuredContent).toEqual({ ok: true, result: { echoed: true } })
    await expect(client.callTool({ name: 'payload_hsah', arguments: {} })).rejects.toThrow(
      'MCP error -32602: Unknown tool: payload_hsah. Did you mean payload_hash? The tools are payload_hash, payload_tools_spend (tools/list describes them).',
    )
  })

  it('lists the spend tool alone while the service is down, then tells the client when it is back', async () => {
    const { remote, client, bridgeServer, changed, logs } = await connected(20)
    remote.down = new Error('fetch failed')
    await bridgeServer.warmUp()
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['payload_tools_spend'])
    expect(changed).toEqual([])
    remote.down = undefined
    await expect.poll(() => changed.length, { timeout: 2000 }).toBe(1)
    expect(logs).toContain("listing the service's 1 tools")
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual([
      'payload_hash',
      'payload_tools_spend',
    ])
  })

  it('sends no list_changed when the client already had the full listing', async () => {
    const { client, bridgeServer, changed } = await connected(10)
    await client.listTools()
    await bridgeServer.warmUp()
    expect(changed).toEqual([])
  })
})
