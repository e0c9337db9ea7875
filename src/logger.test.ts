import { pino } from 'pino'
import { describe, expect, it } from 'vitest'
import { describeError, loggerOptions } from './logger.js'
import { withRequestId } from './request-context.js'

describe('describeError', () => {
  it('keeps the name and message but redacts addresses, hashes and signatures', () => {
    const evm = '0x857b06519E91e3A54538791bDbb0E22373e36b66'
    const solana = '2wKupLR9q6wXYppw8Gr2NvWxKBUqm4PPJKkQfoxHDBg4'
    const text = describeError(new TypeError(`settle failed for ${evm} to ${solana} (500)`))
    expect(text).toBe('TypeError: settle failed for [redacted] to [redacted] (500)')
  })

  it('caps the message at 200 characters and names non-errors by type', () => {
    expect(describeError(new Error('x'.repeat(500)))).toBe(`Error: ${'x'.repeat(200)}`)
    expect(describeError('a secret string')).toBe('string')
  })
})

describe('logger', () => {
  it('adds the current request id to every line written inside a request, and none outside', async () => {
    const lines: Record<string, unknown>[] = []
    const stream = { write: (line: string) => lines.push(JSON.parse(line)) }
    // The project logger's options, written to a capture stream.
    const captured = pino({ ...loggerOptions, level: 'debug' }, stream)
    captured.info('outside')
    await withRequestId('req-42', async () => {
      captured.info({ tool: 'hash' }, 'inside')
      await Promise.resolve()
      captured.debug('after an await')
    })
    expect(lines.map((l) => [l.msg, l.request_id])).toEqual([
      ['outside', undefined],
      ['inside', 'req-42'],
      ['after an await', 'req-42'],
    ])
  })
})
