import type { CallToolResult } from '@modelcontextprotocol/client'
import { afterEach, describe, expect, it } from 'vitest'
import { connectRemote } from './remote.js'
import { listedTool } from './test-support/fake-remote.js'
import {
  freeResult,
  type ScriptedService,
  scriptedService,
  serviceRateLimited,
} from './test-support/scripted-service.js'
import { testBridge } from './test-support/test-bridge.js'

// The bridge on connectRemote, against a service scripted over real HTTP on loopback. The bridge
// over a fake service in memory: bridge.test.ts.

const tools = () => [listedTool('payload_hash', '1000'), listedTool('payload_pipeline', '3000')]
const failure = (result: CallToolResult) =>
  result.structuredContent as { ok: boolean; code: string; error: string }

describe('a service that rate-limits this client (HTTP 429, scripted over real HTTP)', () => {
  let service: ScriptedService
  let closeRemote: () => Promise<void>
  let logs: string[] = []
  let signatures = 0

  /** A bridge on connectRemote to the scripted service, as setup.ts wires it. */
  async function limitedBridge(maxRetryAfterSeconds?: number) {
    service = await scriptedService(tools())
    const real = connectRemote({ mcpUrl: service.url, version: '0' })
    closeRemote = () => real.close()
    logs = []
    signatures = 0
    return testBridge({
      remote: real,
      over: maxRetryAfterSeconds === undefined ? {} : { maxRetryAfterSeconds },
      log: (m) => logs.push(m),
      onSign: () => {
        signatures += 1
      },
    })
  }
  afterEach(async () => {
    await closeRemote?.()
    await service?.close()
  })

  /** Refuses the next `count` requests of `method` with the service's 429. */
  const refuseNext = (method: string, count: number, retryAfter?: string) => {
    let left = count
    service.refuse = (m) =>
      m === method && left-- > 0 ? serviceRateLimited(retryAfter) : undefined
  }
  const calls = () => service.methods.filter((m) => m === 'tools/call').length
  const quota =
    'Too many unpaid requests: 120 per 60 s per client. Paid calls are not limited. Retry after ' +
    'Retry-After seconds.'

  it('waits out a Retry-After within the bound once, and the call goes through', async () => {
    const { bridge } = await limitedBridge()
    refuseNext('tools/call', 1, '1')
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(result).toEqual(freeResult('payload_hash'))
    expect(calls()).toBe(2)
    expect(logs).toEqual(['payload_hash: rate-limited by the service; retrying once in 1 s'])
    expect(signatures).toBe(0)
  })

  it('reports rate_limited with the wait when Retry-After is beyond the bound, without waiting', async () => {
    const { bridge } = await limitedBridge()
    refuseNext('tools/call', 1, '42')
    const result = await bridge.callTool('payload_hash', { input: 'abc' })
    expect(result.isError).toBe(true)
    expect(failure(result)).toEqual({
      ok: false,
      code: 'rate_limited',
      error:
        `The Payload Tools service is rate-limiting this client (${quota}). Retry after 42 s ` +
        '(longer than the 10 s the bridge waits by itself). Nothing was signed or charged.',
      retry_after: 42,
    })
    expect(result._meta?.['payload-tools/failure']).toEqual(result.structuredContent)
    expect(calls()).toBe(1)
    expect(signatures).toBe(0)
  })

  it('reports rate_limited when the one retry is refused too', async () => {
    const { bridge } = await limitedBridge()
    refuseNext('tools/call', 2, '1')
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result)).toEqual({
      ok: false,
      code: 'rate_limited',
      error:
        `The Payload Tools service is rate-limiting this client (${quota}). The bridge waited 1 ` +
        's and retried once, in vain. Retry after 1 s. Nothing was signed or charged.',
      retry_after: 1,
    })
    expect(calls()).toBe(2)
  })

  it('reports rate_limited without a Retry-After, and honours a smaller bound', async () => {
    const { bridge } = await limitedBridge(0)
    refuseNext('tools/call', 1)
    expect(failure(await bridge.callTool('payload_hash', {}))).toEqual({
      ok: false,
      code: 'rate_limited',
      error:
        `The Payload Tools service is rate-limiting this client (${quota}). Retry later (the ` +
        'service gave no Retry-After). Nothing was signed or charged.',
    })
    refuseNext('tools/call', 1, '1')
    expect(failure(await bridge.callTool('payload_hash', {}))).toMatchObject({
      code: 'rate_limited',
      retry_after: 1,
      error: expect.stringContaining(
        'Retry after 1 s (longer than the 0 s the bridge waits by itself).',
      ),
    })
    expect(calls()).toBe(2)
  })

  it('reports a rate-limited listing as rate_limited, not service_unreachable', async () => {
    const { bridge } = await limitedBridge()
    refuseNext('tools/list', 1, '30')
    const result = await bridge.callTool('payload_hash', {})
    expect(failure(result)).toMatchObject({ code: 'rate_limited', retry_after: 30 })
    expect(calls()).toBe(0)
    // The MCP client's own tools/list: only the spend tool, and the log says why.
    refuseNext('tools/list', 1, '30')
    expect((await bridge.listTools()).complete).toBe(false)
    expect(logs.at(-1)).toMatch(
      /^cannot list the service's tools: The Payload Tools service is rate-limiting this client/,
    )
  })
})
