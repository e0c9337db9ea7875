import { describe, expect, it } from 'vitest'
import { serialQueue } from './evm-facilitator.js'

describe('serialQueue', () => {
  it('starts each task once the one before has settled, in call order, past a failure', async () => {
    const serial = serialQueue()
    const log: string[] = []
    const task =
      (name: string, fail = false) =>
      async () => {
        log.push(`start ${name}`)
        await new Promise((resolve) => setTimeout(resolve, 5))
        log.push(`end ${name}`)
        if (fail) throw new Error(name)
        return name
      }
    const results = await Promise.allSettled([
      serial(task('a')),
      serial(task('b', true)),
      serial(task('c')),
    ])
    expect(results).toEqual([
      { status: 'fulfilled', value: 'a' },
      { status: 'rejected', reason: new Error('b') },
      { status: 'fulfilled', value: 'c' },
    ])
    expect(log).toEqual(['start a', 'end a', 'start b', 'end b', 'start c', 'end c'])
  })
})
