import { Client as V2Client } from '@modelcontextprotocol/client'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { Transport as V1Transport } from '@modelcontextprotocol/sdk/shared/transport.js'
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { InMemoryTransport } from '@modelcontextprotocol/server'
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

/** The bridge server over the fake service, not yet serving. */
async function bridgeServerOverFake(retryMs: number) {
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
  cleanup.push(() => bridgeServer.close())
  return { remote, bridgeServer, logs }
}

/** The bridge server over the fake service, serving the v1 Client (2025-11-25) in memory. */
async function connected(retryMs: number) {
  const { remote, bridgeServer, logs } = await bridgeServerOverFake(retryMs)
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const client = new Client({ name: 'server-test', version: '1' })
  const changed: unknown[] = []
  client.setNotificationHandler(ToolListChangedNotificationSchema, (n) => {
    changed.push(n)
  })
  bridgeServer.serve(serverSide)
  await client.connect(clientSide as unknown as V1Transport)
  cleanup.unshift(() => client.close())
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

  it('serves the v2 client pinned to 2026-07-28: the listing, the paid call, an unknown tool', async () => {
    const { bridgeServer } = await bridgeServerOverFake(10)
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    bridgeServer.serve(serverSide)
    const client = new V2Client(
      { name: 'server-test-2026', version: '1' },
      { versionNegotiation: { mode: { pin: '2026-07-28' } } },
    )
    await client.connect(clientSide)
    cleanup.unshift(() => client.close())
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28')
    expect(client.getInstructions()).toMatch(/^A local bridge to the Payload Tools service/)
    const { tools } = await client.listTools()
    expect(tools.map((t) => t.name)).toEqual(['payload_hash', 'payload_tools_spend'])
    const result = await client.callTool({ name: 'payload_hash', arguments: { input: 'abc' } })
    expect(result.structuredContent).toEqual({ ok: true, result: { echoed: true } })
    await expect(client.callTool({ name: 'payload_hsah', arguments: {} })).rejects.toThrow(
      'Unknown tool: payload_hsah. Did you mean payload_hash?',
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

  it('tells a 2026-07-28 client (subscriptions/listen) when the service is back', async () => {
    const { remote, bridgeServer } = await bridgeServerOverFake(20)
    remote.down = new Error('fetch failed')
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
    bridgeServer.serve(serverSide)
    const refreshed: string[][] = []
    const client = new V2Client(
      { name: 'server-test-2026', version: '1' },
      {
        versionNegotiation: { mode: { pin: '2026-07-28' } },
        listChanged: {
          tools: { onChanged: (_error, tools) => refreshed.push((tools ?? []).map((t) => t.name)) },
        },
      },
    )
    await client.connect(clientSide)
    cleanup.unshift(() => client.close())
    await bridgeServer.warmUp()
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['payload_tools_spend'])
    remote.down = undefined
    await expect.poll(() => refreshed.length, { timeout: 2000 }).toBe(1)
    expect(refreshed[0]).toEqual(['payload_hash', 'payload_tools_spend'])
  })

  it('sends no list_changed when the client already had the full listing', async () => {
    const { client, bridgeServer, changed } = await connected(10)
    await client.listTools()
    await bridgeServer.warmUp()
    expect(changed).toEqual([])
  })
})
