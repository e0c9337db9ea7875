import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config.js'

// The facilitator settings of loadConfig (src/config.ts): FACILITATOR_URL with FACILITATOR_AUTH.

const CDP = 'https://api.cdp.coinbase.com/platform/v2/x402'
const PAYAI = 'https://facilitator.payai.network'

describe('facilitator configuration', () => {
  it('reads the list in order, each facilitator `none` unless FACILITATOR_AUTH says', () => {
    expect(loadConfig({}).facilitators).toEqual([])
    expect(loadConfig({ FACILITATOR_URL: `${CDP}/, ${PAYAI}` }).facilitators).toEqual([
      { url: CDP, auth: 'none' },
      { url: PAYAI, auth: 'none' },
    ])
    const config = loadConfig({
      FACILITATOR_URL: `${CDP},${PAYAI}`,
      FACILITATOR_AUTH: 'CDP, payai',
      CDP_API_KEY_ID: 'cdp-id',
      CDP_API_KEY_SECRET: 'cdp-secret',
      PAYAI_API_KEY_ID: 'payai-id',
      PAYAI_API_KEY_SECRET: 'payai-secret',
    })
    expect(config.facilitators).toEqual([
      { url: CDP, auth: 'cdp' },
      { url: PAYAI, auth: 'payai' },
    ])
    expect(config.cdpApiKey).toEqual({ id: 'cdp-id', secret: 'cdp-secret' })
    expect(config.payaiApiKey).toEqual({ id: 'payai-id', secret: 'payai-secret' })
  })

  it('refuses an auth list of another length', () => {
    expect(() =>
      loadConfig({ FACILITATOR_URL: `${CDP},${PAYAI}`, FACILITATOR_AUTH: 'none' }),
    ).toThrow(
      'Invalid configuration:\n  FACILITATOR_AUTH: lists 1 auth mode(s) for the 2 facilitator(s) of FACILITATOR_URL; give one per facilitator, in the same order',
    )
    expect(() => loadConfig({ FACILITATOR_AUTH: 'none' })).toThrow(
      'FACILITATOR_AUTH: lists 1 auth mode(s) for the 0 facilitator(s) of FACILITATOR_URL',
    )
  })

  it('refuses cdp or payai without both of its keys, naming what is missing and for whom', () => {
    expect(() =>
      loadConfig({ FACILITATOR_URL: CDP, FACILITATOR_AUTH: 'cdp', CDP_API_KEY_ID: 'id' }),
    ).toThrow(
      'Invalid configuration:\n  CDP_API_KEY_SECRET: required by FACILITATOR_AUTH cdp (for api.cdp.coinbase.com); without it every request to it would go unauthenticated',
    )
    expect(() =>
      loadConfig({ FACILITATOR_URL: `${CDP},${PAYAI}`, FACILITATOR_AUTH: 'none,payai' }),
    ).toThrow(
      'PAYAI_API_KEY_ID, PAYAI_API_KEY_SECRET: required by FACILITATOR_AUTH payai (for facilitator.payai.network); without them every request to it would go unauthenticated',
    )
  })

  it('refuses an unknown mode, a URL twice, and URLs holding credentials or a query', () => {
    expect(() => loadConfig({ FACILITATOR_URL: CDP, FACILITATOR_AUTH: 'bearer' })).toThrow(
      /FACILITATOR_AUTH\.0: Invalid option: expected one of "none"\|"cdp"\|"payai"/,
    )
    expect(() => loadConfig({ FACILITATOR_URL: `${CDP},${CDP}/` })).toThrow(
      `FACILITATOR_URL: lists ${CDP} twice`,
    )
    for (const url of [
      'https://user:pass@f.example',
      'https://f.example/?key=abc',
      'ftp://f.example',
    ]) {
      const error = (() => {
        try {
          loadConfig({ FACILITATOR_URL: url })
        } catch (e) {
          return (e as Error).message
        }
      })()
      expect(error).toBe(
        'Invalid configuration:\n  FACILITATOR_URL.0: each entry must be an http(s) URL without credentials, query or fragment (credentials go in FACILITATOR_AUTH)',
      )
    }
  })

  it('never quotes a key in its errors', () => {
    const secret = '-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEI'
    const message = (() => {
      try {
        loadConfig({
          FACILITATOR_URL: CDP,
          FACILITATOR_AUTH: 'cdp,none',
          CDP_API_KEY_SECRET: secret,
        })
      } catch (e) {
        return (e as Error).message
      }
    })()
    expect(message).toContain('FACILITATOR_AUTH: lists 2 auth mode(s)')
    expect(message).not.toContain('MHcCAQEEI')
  })
})
