import { afterEach, describe, expect, it } from 'vitest'
import { rateLimitAwareFetch, ServiceRateLimitedError } from './rate-limit.js'
import { connectRemote } from './remote.js'
import { listedTool } from './test-support/fake-remote.js'
import {
  type ScriptedService,
  scriptedService,
  serviceRateLimited,
} from './test-support/scripted-service.js'

let service: ScriptedService | undefined
afterEach(async () => {
  await service?.close()
  service = undefined
})

describe('rateLimitAwareFetch', () => {
  it("turns the service's 429 into ServiceRateLimitedError with its message and Retry-After", async () => {
    service = await scriptedService([])
    service.refuse = () => serviceRateLimited('42')
    const error = await rateLimitAwareFetch()(service.url, { method: 'POST', body: '{}' }).catch(
      (e: unknown) => e,
    )
    expect(error).toBeInstanceOf(ServiceRateLimitedError)
    expect(error).toMatchObject({
      retryAfterSeconds: 42,
      detail:
        'Too many unpaid requests: 120 per 60 s per client. Paid calls are not limited. Retry after Retry-After seconds.',
    })
  })

  it('quotes a body that is not the JSON envelope, and passes other statuses through', async () => {
    service = await scriptedService([])
    service.refuse = () => ({ status: 429, body: '<html>slow down</html>' })
    await expect(
      rateLimitAwareFetch()(service.url, { method: 'POST', body: '{}' }),
    ).rejects.toMatchObject({ detail: '<html>slow down</html>', retryAfterSeconds: undefined })
    service.refuse = () => ({ status: 503, body: 'down' })
    const res = await rateLimitAwareFetch()(service.url, { method: 'POST', body: '{}' })
    expect(res.status).toBe(503)
    expect(await res.text()).toBe('down')
  })
})

describe('connectRemote behind a rate limit', () => {
  it('rejects a 429 to tools/list with ServiceRateLimitedError, then recovers', async () => {
    service = await scriptedService([listedTool('payload_hash', '1000')])
    service.refuse = (method) => (method === 'tools/list' ? serviceRateLimited('7') : undefined)
    const remote = connectRemote({ mcpUrl: service.url, version: '0' })
    await expect(remote.listTools()).rejects.toMatchObject({
      name: 'ServiceRateLimitedError',
      retryAfterSeconds: 7,
    })
    service.refuse = () => undefined
    expect((await remote.listTools()).map((t) => t.name)).toEqual(['payload_hash'])
    await remote.close()
  })

  it('rejects a 429 to the opening (the version probe) the same way', async () => {
    service = await scriptedService([])
    service.refuse = () => serviceRateLimited('3')
    const remote = connectRemote({ mcpUrl: service.url, version: '0' })
    await expect(remote.listTools()).rejects.toBeInstanceOf(ServiceRateLimitedError)
    // Automatic negotiation opens with server/discover (2026-07-28); refused, it goes no further.
    expect(service.methods).toEqual(['server/discover'])
    await remote.close()
  })
})
