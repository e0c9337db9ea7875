import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type PrivateRedis, startPrivateRedis } from './devnet/redis.js'
import { createRedis, type SharedRedis } from './redis.js'

// A real redis-server of our own, so that the test can stop it (never the shared system one).

let server: PrivateRedis
let redis: SharedRedis
/** Every command the connection reported (`onCommand`). */
const commands: { command: string; result: string; seconds: number }[] = []
const reported = (name: string) => commands.filter((c) => c.command === name).map((c) => c.result)

beforeAll(async () => {
  server = await startPrivateRedis()
  // A bound on a hang: nothing here waits for a timeout (a command is refused at once while
  // Redis is down).
  redis = createRedis({ url: server.url, timeoutMs: 10_000, onCommand: (c) => commands.push(c) })
})
afterAll(async () => {
  await redis?.close()
  await server?.destroy()
})

const until = async (check: () => boolean, ms = 60_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('the shared Redis connection', () => {
  it('connects, answers commands, and reports ready', async () => {
    await until(() => redis.state().status === 'ready')
    expect(await redis.client.set('k', 'v', 'PX', 10_000, 'NX')).toBe('OK')
    expect(await redis.client.set('k', 'w', 'PX', 10_000, 'NX')).toBeNull()
    expect(await redis.client.get('k')).toBe('v')
    expect(reported('set')).toEqual(['ok', 'ok'])
    expect(reported('get')).toEqual(['ok'])
    for (const c of commands) expect(c.seconds).toBeGreaterThanOrEqual(0)
  })

  it('fails a command at once while Redis is down, reports why, and recovers by itself', async () => {
    await server.stop()
    await until(() => redis.state().status === 'down')
    // No offline queue: the command is refused while Redis is still down, not held until a
    // reconnect (which comes only after the server starts again below).
    await expect(redis.client.get('k')).rejects.toThrow()
    expect(redis.state()).toMatchObject({ status: 'down', lastError: expect.any(String) })
    expect(reported('get')).toEqual(['ok', 'error'])

    await server.start()
    await until(() => redis.state().status === 'ready')
    // The restarted server is empty (persistence off): a fresh claim succeeds.
    expect(await redis.client.set('k', 'x', 'PX', 10_000, 'NX')).toBe('OK')
  })
})
