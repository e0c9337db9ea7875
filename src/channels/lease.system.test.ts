import { randomUUID } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { startPrivateRedis } from '../devnet/redis.js'
import { createRedis } from '../redis.js'
import { createLease } from './lease.js'

// The channel manager's lease on a Redis server of our own, stopped and started again: the
// outage a lease holder must live through.

const prefix = `payload-tools-test:${randomUUID()}`

describe('the channel manager lease through a Redis outage', () => {
  it('keeps its holder running through a Redis outage: the renewal waits for Redis, finds the lease gone (Redis restarted empty) and takes it again', async () => {
    const own = await startPrivateRedis()
    // The service's own connection: no offline queue, and a command timeout the lease's
    // connection must not inherit (a renewal timed out while Redis was away went unhandled).
    const { client } = createRedis({ url: own.url, timeoutMs: 200 })
    const lease = createLease(client, { pollMs: 50, key: `${prefix}:outage`, ttlMs: 600 })
    const events: string[] = []
    try {
      lease.start({ onGain: () => events.push('+'), onLose: () => events.push('-') })
      await until(() => lease.held())
      await own.stop()
      // Several renewals fall due while Redis is away (a third of the TTL apart): none may end
      // the process.
      await new Promise((r) => setTimeout(r, 1_500))
      expect(events).toEqual(['+'])
      await own.start()
      await until(() => events.length === 3)
      expect(events).toEqual(['+', '-', '+'])
      expect(lease.held()).toBe(true)
    } finally {
      await lease.stop()
      client.disconnect()
      await own.destroy()
    }
  })
})

async function until(condition: () => boolean, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
