import { describe, expect, it } from 'vitest'
import { pong, startPrivateRedis } from './redis.js'

describe('startPrivateRedis', () => {
  it('starts, stops (refusing connections) and starts again on the same port', async () => {
    const redis = await startPrivateRedis()
    try {
      expect(redis.url).toBe(`redis://127.0.0.1:${redis.port}`)
      expect(await pong(redis.port)).toBe(true)
      await redis.stop()
      expect(redis.running()).toBe(false)
      expect(await pong(redis.port)).toBe(false)
      await redis.start()
      expect(redis.running()).toBe(true)
      expect(await pong(redis.port)).toBe(true)
    } finally {
      await redis.destroy()
    }
    expect(await pong(redis.port)).toBe(false)
  })
})
