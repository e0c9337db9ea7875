import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { createDrain } from './drain.js'

describe('the drain', () => {
  it('counts requests in flight, then refuses new ones with 503 shutting_down and Connection: close', async () => {
    let shuttingDown = false
    const drain = createDrain(() => shuttingDown)
    let release: () => void = () => {}
    const app = new Hono()
    app.use(drain.middleware)
    app.get('/slow', async (c) => {
      await new Promise<void>((resolve) => {
        release = resolve
      })
      return c.json({ ok: true })
    })
    app.get('/fast', (c) => c.json({ ok: true }))

    expect((await app.request('/fast')).headers.get('connection')).toBeNull()
    const inFlight = app.request('/slow')
    await new Promise((resolve) => setTimeout(resolve, 10))
    expect(drain.inFlight()).toBe(1)
    let idle = false
    const idled = drain.idle().then(() => {
      idle = true
    })

    shuttingDown = true
    const refused = await app.request('/fast')
    expect(refused.status).toBe(503)
    expect(refused.headers.get('connection')).toBe('close')
    expect(refused.headers.get('retry-after')).toBe('1')
    expect(await refused.json()).toEqual({
      ok: false,
      code: 'shutting_down',
      error: 'The service is shutting down; nothing was run or charged. Retry',
    })
    expect(idle).toBe(false)

    release()
    const finished = await inFlight
    expect(finished.status).toBe(200)
    expect(finished.headers.get('connection')).toBe('close')
    await idled
    expect(drain.inFlight()).toBe(0)
  })
})
