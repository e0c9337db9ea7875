import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { Endpoint } from './auth.js'
import { createHttpFacilitatorClient } from './client.js'

describe('createHttpFacilitatorClient', () => {
  it('makes only the called endpoint’s headers, and sends them', async () => {
    const seen: (string | undefined)[] = []
    const server = createServer((req, res) => {
      seen.push(req.headers.authorization)
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end('{"kinds":[],"extensions":[],"signers":{}}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const made: Endpoint[] = []
      let all = 0
      const client = createHttpFacilitatorClient({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        timeoutMs: 5_000,
        auth: {
          mode: 'cdp',
          headersFor: async (endpoint) => {
            made.push(endpoint)
            return { Authorization: `Bearer for-${endpoint}` }
          },
          createAuthHeaders: async () => {
            all++
            return {}
          },
        },
      })
      await client.getSupported()
      await client.getSupported()
      expect(made).toEqual(['supported', 'supported'])
      expect(all).toBe(0)
      expect(seen).toEqual(['Bearer for-supported', 'Bearer for-supported'])
    } finally {
      await new Promise((resolve) => server.close(resolve))
    }
  })

  it('sends no Authorization without auth', async () => {
    const client = createHttpFacilitatorClient({
      url: 'http://127.0.0.1:9',
      timeoutMs: 1_000,
      auth: { mode: 'none' },
    })
    expect(await client.createAuthHeaders('verify')).toEqual({ headers: {} })
  })
})
