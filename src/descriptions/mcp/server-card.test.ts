import { describe, expect, it } from 'vitest'
import { catalog } from '../../tools/catalog.js'
import { buildMcpCatalog, buildServerCard } from './server-card.js'

// The bounds of the SEP-2127 draft's schema (experimental-ext-server-card, schema.ts) that a
// generated card could break: the name's pattern, the description's 100 characters.
describe('buildServerCard', () => {
  it.each([
    ['https://tools.example', 'example.tools/payload-tools'],
    ['https://api.payload-tools.dev:8443/base', 'dev.payload-tools.api/payload-tools'],
    ['http://127.0.0.1:3000', '1.0.0.127/payload-tools'],
    ['http://[::1]:3000', '---1-/payload-tools'],
  ])('%s: the name %s fits the draft pattern, the description 100 characters', (base, name) => {
    const card = buildServerCard({ tools: catalog, publicBaseUrl: base })
    expect(card.name).toBe(name)
    expect(card.name).toMatch(/^[a-zA-Z0-9.-]+\/[a-zA-Z0-9._-]+$/)
    expect(card.description.length).toBeLessThanOrEqual(100)
    expect(card.remotes[0].url).toBe(`${base}/mcp`)
    expect(buildMcpCatalog(card, base).entries[0]?.identifier).toBe(`urn:mcp:server:${name}`)
  })
})
