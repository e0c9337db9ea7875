import { describe, expect, it } from 'vitest'
import { hmacTool } from '../tools/hmac.js'
import { pipelineTool } from '../tools/pipeline/index.js'
import { unpaidMessage } from './offer.js'

describe('unpaidMessage', () => {
  it('gives the price in USDC when the body passes or was not sent', () => {
    expect(unpaidMessage(hmacTool, undefined)).toBe('Payment required: /hmac costs 0.001 USDC')
    expect(unpaidMessage(pipelineTool, { valid: true, errors: [] })).toBe(
      'Payment required: /pipeline costs 0.003 USDC',
    )
    expect(unpaidMessage(hmacTool, { valid: null, errors: [], reason: 'busy' })).toBe(
      'Payment required: /hmac costs 0.001 USDC',
    )
  })

  it('leads with what is wrong with a refused body, at most five issues', () => {
    expect(
      unpaidMessage(hmacTool, {
        valid: false,
        errors: [
          { path: '/secret', message: 'Required (expected string)' },
          { path: '', message: 'Unrecognized key: "key"' },
        ],
      }),
    ).toBe(
      'Invalid body, fix it before paying: /secret Required (expected string); / Unrecognized key: "key". /hmac costs 0.001 USDC',
    )
    const seven = Array.from({ length: 7 }, (_, i) => ({ path: `/${i}`, message: 'bad' }))
    expect(unpaidMessage(hmacTool, { valid: false, errors: seven })).toBe(
      'Invalid body, fix it before paying: /0 bad; /1 bad; /2 bad; /3 bad; /4 bad (and 2 more). /hmac costs 0.001 USDC',
    )
  })
})
