import { describe, expect, it } from 'vitest'
import { healthcheckUrl } from './healthcheck.js'

// Over a socket and as a program: healthcheck.e2e.test.ts.

describe('healthcheckUrl', () => {
  it('uses the service defaults, and loopback for a wildcard bind address', () => {
    expect(healthcheckUrl({})).toBe('http://127.0.0.1:8402/health')
    expect(healthcheckUrl({ HOST: '0.0.0.0', PORT: '9000' })).toBe('http://127.0.0.1:9000/health')
    expect(healthcheckUrl({ HOST: '::', PORT: '9000' })).toBe('http://[::1]:9000/health')
    expect(healthcheckUrl({ HOST: '10.0.0.5', PORT: '' })).toBe('http://10.0.0.5:8402/health')
    expect(healthcheckUrl({ HOST: 'fd00::5' })).toBe('http://[fd00::5]:8402/health')
  })

  it('refuses an environment the service would refuse', () => {
    expect(() => healthcheckUrl({ PORT: 'eighty' })).toThrow(/PORT/)
  })
})
