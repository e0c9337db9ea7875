import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { startCommand, startNodeFlags } from './child.js'

// The oracle reads package.json itself: `npm start` is `node <flags> dist/main.js`.
const start = (
  JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    scripts: { start: string }
  }
).scripts.start

describe('startCommand and startNodeFlags', () => {
  it('are npm start’s words, and its Node flags between `node` and the entry point', () => {
    expect(startCommand().join(' ')).toBe(start)
    const flags = start.replace(/^node /, '').replace(/ dist\/main\.js$/, '')
    expect(startNodeFlags()).toEqual(flags.split(' '))
    expect(startNodeFlags()).toContain('--v8-pool-size=1')
  })
})
