import { describe, expect, it } from 'vitest'
import { uuidV7 } from './uuid-v7.js'

const V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/

describe('uuidV7', () => {
  it('puts the 48-bit millisecond time first, then version 7 and the RFC 9562 variant', () => {
    const id = uuidV7(Date.UTC(2025, 5, 15))
    expect(id).toMatch(V7)
    expect(id.slice(0, 13)).toBe('019770e2-c800')
    expect(uuidV7(0).slice(0, 13)).toBe('00000000-0000')
    expect(uuidV7(2 ** 48 - 1).slice(0, 13)).toBe('ffffffff-ffff')
  })

  it('sorts later ids after earlier ones and never repeats', () => {
    const ids = Array.from({ length: 2_000 }, (_, i) =>
      uuidV7(1_750_000_000_000 + Math.floor(i / 10)),
    )
    for (const id of ids) expect(id).toMatch(V7)
    expect(new Set(ids).size).toBe(ids.length)
    for (let i = 10; i < ids.length; i += 10) {
      expect((ids[i] as string) > (ids[i - 1] as string)).toBe(true)
    }
  })
})
