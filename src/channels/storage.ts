import { join } from 'node:path'
import type { ChannelStorage } from '@x402/evm/batch-settlement/server'
import { FileChannelStorage } from '@x402/evm/batch-settlement/server/file-storage'
import {
  RedisChannelStorage,
  type RedisChannelStorageClient,
} from '@x402/evm/batch-settlement/server/redis-storage'
import type { Redis } from 'ioredis'

/** Prefix of the channel records in Redis (the SDK adds `:server:channel:<id>`). */
export const CHANNEL_KEY_PREFIX = 'payload-tools:channels'

/**
 * The SDK's Redis client shape (node-redis v4 style: `eval(script, {keys, arguments})`,
 * `scanIterator`) over an ioredis connection, which spells those calls differently.
 *
 * @example new RedisChannelStorage({ client: ioredisChannelClient(redis.client) })
 */
export function ioredisChannelClient(client: Redis): RedisChannelStorageClient {
  return {
    get: (key) => client.get(key),
    set: (key, value, options) => {
      if (options?.PX !== undefined && options.NX)
        return client.set(key, value, 'PX', options.PX, 'NX')
      if (options?.PX !== undefined) return client.set(key, value, 'PX', options.PX)
      if (options?.NX) return client.set(key, value, 'NX')
      return client.set(key, value)
    },
    del: (key) => client.del(key),
    eval: (script, { keys, arguments: args }) => client.eval(script, keys.length, ...keys, ...args),
    scanIterator: ({ MATCH, COUNT }) => scanKeys(client, MATCH ?? '*', COUNT ?? 100),
  }
}

/** Every key matching `pattern`, SCAN page by page (never KEYS, which blocks Redis). */
async function* scanKeys(client: Redis, pattern: string, count: number): AsyncIterable<string[]> {
  let cursor = '0'
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', count)
    cursor = next
    if (keys.length > 0) yield keys
  } while (cursor !== '0')
}

/**
 * Where the channels' state lives: Redis, shared by every instance (REDIS_URL), or files under
 * `<dataDir>/channels` for a single instance. Never memory only: a voucher answered with a result
 * is money the manager claims later, so it must outlive the process.
 *
 * @param options.redis - the instance's Redis connection, if any
 * @param options.dataDir - the service's data directory (`./data`)
 * @param options.keyPrefix - prefix of the Redis records (default {@link CHANNEL_KEY_PREFIX})
 * @example const storage = channelStorage({ redis: shared?.client, dataDir: './data' })
 */
export function channelStorage(options: {
  redis?: Redis
  dataDir: string
  keyPrefix?: string
}): ChannelStorage {
  if (options.redis) {
    return new RedisChannelStorage({
      client: ioredisChannelClient(options.redis),
      keyPrefix: options.keyPrefix ?? CHANNEL_KEY_PREFIX,
    })
  }
  return new FileChannelStorage({ directory: join(options.dataDir, 'channels') })
}
