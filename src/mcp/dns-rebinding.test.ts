import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import { loadConfig } from '../config.js'
import { dnsRebindingProtection, resolveAllowList } from './dns-rebinding.js'

describe('resolveAllowList', () => {
  it('derives hosts and origins from the public URL, loopback, HOST and PORT', () => {
    expect(
      resolveAllowList({ publicBaseUrl: 'https://Tools.Example', host: '10.0.0.5', port: 8402 }),
    ).toEqual({
      hosts: ['tools.example', 'localhost', '127.0.0.1', '[::1]', '10.0.0.5'],
      origins: [
        'https://tools.example',
        'http://localhost:8402',
        'http://127.0.0.1:8402',
        'http://[::1]:8402',
      ],
    })
  })

  it('leaves out a wildcard bind address and brackets a bare IPv6 HOST', () => {
    expect(
      resolveAllowList({ publicBaseUrl: 'http://127.0.0.1:9000', host: '0.0.0.0', port: 9000 })
        .hosts,
    ).toEqual(['127.0.0.1', 'localhost', '[::1]'])
    expect(
      resolveAllowList({ publicBaseUrl: 'http://[::1]:9000', host: '::1', port: 9000 }).hosts,
    ).toEqual(['[::1]', 'localhost', '127.0.0.1'])
  })

  it('takes the port from the public URL when PORT is not given', () => {
    expect(resolveAllowList({ publicBaseUrl: 'http://127.0.0.1:8402' }).origins).toEqual([
      'http://127.0.0.1:8402',
      'http://localhost:8402',
      'http://[::1]:8402',
    ])
  })

  it('lets configured lists replace the defaults, normalised', () => {
    expect(
      resolveAllowList({
        publicBaseUrl: 'https://tools.example',
        allowedHosts: ['API.example:443', '*'],
        allowedOrigins: ['https://app.example/', '*'],
      }),
    ).toEqual({ hosts: ['api.example', '*'], origins: ['https://app.example', '*'] })
  })

  it('reads MCP_ALLOWED_HOSTS and MCP_ALLOWED_ORIGINS as comma lists, unset = defaults', () => {
    const config = loadConfig({
      MCP_ALLOWED_HOSTS: 'tools.example, [::1]:8402',
      MCP_ALLOWED_ORIGINS: 'https://app.example/',
    })
    expect(
      resolveAllowList({
        ...config,
        allowedHosts: config.mcpAllowedHosts,
        allowedOrigins: config.mcpAllowedOrigins,
      }),
    ).toEqual({
      hosts: ['tools.example', '[::1]'],
      origins: ['https://app.example'],
    })
    const defaults = loadConfig({ PORT: '9000' })
    expect(defaults.mcpAllowedHosts).toBeUndefined()
    expect(defaults.mcpAllowedOrigins).toBeUndefined()
    expect(() => loadConfig({ MCP_ALLOWED_HOSTS: 'evil@tools.example' })).toThrow(
      'MCP_ALLOWED_HOSTS.0: each entry must be "*" or a host name (port ignored)',
    )
    expect(() => loadConfig({ MCP_ALLOWED_ORIGINS: 'ftp://tools.example' })).toThrow(
      'MCP_ALLOWED_ORIGINS.0: each entry must be "*" or an http(s) origin',
    )
  })

  it('throws on an invalid configured host', () => {
    expect(() =>
      resolveAllowList({ publicBaseUrl: 'https://t.example', allowedHosts: ['a@b'] }),
    ).toThrow('Invalid host name: a@b')
  })
})

describe('dnsRebindingProtection', () => {
  const app = (hosts: string[], origins: string[]) => {
    const a = new Hono()
    a.use('/mcp', dnsRebindingProtection({ hosts, origins }))
    a.post('/mcp', (c) => c.text('ok'))
    return (headers: Record<string, string>) =>
      a.request('http://127.0.0.1:8402/mcp', { method: 'POST', headers })
  }

  it('checks the Host hostname regardless of port, and Origin exactly', async () => {
    const post = app(['127.0.0.1', 'tools.example'], ['https://tools.example'])
    expect((await post({})).status).toBe(200)
    expect((await post({ host: 'tools.example:443' })).status).toBe(200)
    expect((await post({ host: 'TOOLS.example' })).status).toBe(200)
    expect((await post({ host: 'evil.test' })).status).toBe(403)
    expect((await post({ host: 'tools.example.evil.test' })).status).toBe(403)
    expect((await post({ host: 'evil.test@tools.example' })).status).toBe(403)
    expect((await post({ origin: 'https://tools.example' })).status).toBe(200)
    expect((await post({ origin: 'http://tools.example' })).status).toBe(403)
    expect((await post({ origin: 'https://tools.example:8443' })).status).toBe(403)
    expect((await post({ origin: 'not a url' })).status).toBe(403)
  })

  it('disables a check whose list holds "*"', async () => {
    const post = app(['*'], ['*'])
    expect((await post({ host: 'anything.test', origin: 'https://evil.test' })).status).toBe(200)
  })
})
