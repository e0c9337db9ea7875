import { randomUUID } from 'node:crypto'
import type { Channel } from '@x402/evm/batch-settlement/server'
import { RedisChannelStorage } from '@x402/evm/batch-settlement/server/redis-storage'
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createLease } from './lease.js'
import { ioredisChannelClient } from './storage.js'

// The channels' shared state on the machine's Redis (127.0.0.1:6379): the SDK's Redis channel
// store through our ioredis adapter, and the manager's lease between two instances.

let redis: Redis
const prefix = `payload-tools-test:${randomUUID()}`

beforeAll(() => {
  redis = new Redis('redis://127.0.0.1:6379', { lazyConnect: false })
})
afterAll(async () => {
  const keys = await redis.keys(`${prefix}*`)
  if (keys.length > 0) await redis.del(...keys)
  redis.disconnect()
})

const channel = (id: string, charged: string): Channel => ({
  channelId: id,
  channelConfig: {
    payer: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    payerAuthorizer: '0x3C44CdDdB6a900fa2b585dd299e03d12FA4293BC',
    receiver: '0x209693Bc6afc0C5328bA36FaF03C514EF312287C',
    receiverAuthorizer: '0x90F79bf6EB2c4f870365E785982E1f101E93b906',
    token: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
    withdrawDelay: 900,
    salt: `0x${'00'.repeat(32)}`,
  },
  chargedCumulativeAmount: charged,
  signedMaxClaimable: charged,
  signature: '0x',
  balance: '1000000',
  totalClaimed: '0',
  withdrawRequestedAt: 0,
  refundNonce: 0,
  lastRequestTimestamp: 0,
})

describe('the channel store on Redis (ioredis adapter)', () => {
  it('moves a channel forward atomically under concurrent updates from two connections', async () => {
    const other = new Redis('redis://127.0.0.1:6379')
    try {
      const stores = [redis, other].map(
        (client) =>
          new RedisChannelStorage({ client: ioredisChannelClient(client), keyPrefix: prefix }),
      )
      const id = `0x${'aa'.repeat(32)}`
      await stores[0]?.updateChannel(id, () => channel(id, '0'))
      // 40 increments of 1000, half through each connection, all at once.
      await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          stores[i % 2]?.updateChannel(id, (current) =>
            current
              ? {
                  ...current,
                  chargedCumulativeAmount: String(BigInt(current.chargedCumulativeAmount) + 1000n),
                }
              : current,
          ),
        ),
      )
      expect((await stores[1]?.get(id))?.chargedCumulativeAmount).toBe('40000')
      expect((await stores[0]?.list())?.map((c) => c.channelId)).toEqual([id])
      await stores[0]?.updateChannel(id, () => undefined)
      expect(await stores[1]?.get(id)).toBeUndefined()
    } finally {
      other.disconnect()
    }
  })
})

describe('the channel manager lease', () => {
  it('is held by one instance at a time; the other takes it once the first gives it back', async () => {
    const key = `${prefix}:lease`
    const [a, b] = [
      createLease(redis, { pollMs: 50, key }),
      createLease(redis, { pollMs: 50, key }),
    ]
    const events: string[] = []
    a.start({ onGain: () => events.push('a+'), onLose: () => events.push('a-') })
    await until(() => a.held())
    b.start({ onGain: () => events.push('b+'), onLose: () => events.push('b-') })
    await new Promise((r) => setTimeout(r, 300))
    expect([a.held(), b.held()]).toEqual([true, false])
    await a.stop()
    await until(() => b.held())
    expect(events).toEqual(['a+', 'b+'])
    await b.stop()
  })

  it('is always held by an instance without Redis', async () => {
    const lease = createLease(undefined)
    let gained = 0
    lease.start({ onGain: () => gained++, onLose: () => {} })
    expect([lease.held(), gained]).toEqual([true, 1])
    await lease.stop()
    expect(lease.held()).toBe(false)
  })
})

async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}
