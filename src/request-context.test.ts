import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { currentRequestId, withRequestId } from './request-context.js'

describe('request context', () => {
  it('carries the id through awaits and timers, and only inside its run', async () => {
    expect(currentRequestId()).toBeUndefined()
    const seen = await withRequestId('req-1', async () => {
      const before = currentRequestId()
      await sleep(5)
      const afterTimer = currentRequestId()
      const inPromise = await Promise.resolve().then(() => currentRequestId())
      return [before, afterTimer, inPromise]
    })
    expect(seen).toEqual(['req-1', 'req-1', 'req-1'])
    expect(currentRequestId()).toBeUndefined()
  })

  it('keeps concurrent requests apart', async () => {
    const run = (id: string, ms: number) =>
      withRequestId(id, async () => {
        await sleep(ms)
        return currentRequestId()
      })
    expect(await Promise.all([run('a', 20), run('b', 1), run('c', 10)])).toEqual(['a', 'b', 'c'])
  })
})
