import { describe, expect, it } from 'vitest'
import { catalog } from '../tools/catalog.js'
import { closestName, UnknownToolError } from './unknown-tool.js'

const names = catalog.map((t) => t.mcpName)

describe('closestName', () => {
  it.each([
    ['payload_hsah', 'payload_hash'],
    ['payload_hash', 'payload_hash'],
    ['PAYLOAD_HASH', 'payload_hash'],
    ['payload_base46', 'payload_base64'],
    ['payload_json_validat', 'payload_json_validate'],
    ['payload-jwt-inspect', 'payload_jwt_inspect'],
    ['payload_insepct', 'payload_inspect'],
    ['hash', undefined],
    ['weather', undefined],
    ['', undefined],
    ['x'.repeat(10_000), undefined],
  ])('%s -> %s', (name, closest) => {
    expect(closestName(name, names)).toBe(closest)
  })
})

describe('UnknownToolError', () => {
  it('names the closest tool and every tool, code -32602, the names in data', () => {
    const error = new UnknownToolError('payload_hsah', names)
    expect(error.code).toBe(-32602)
    expect(error.message).toBe(
      'Unknown tool: payload_hsah. Did you mean payload_hash? The tools are payload_hash, payload_base64, payload_hmac, payload_json_validate, payload_jwt_inspect, payload_text_diff, payload_pipeline, payload_inspect (tools/list describes them).',
    )
    expect(error.data).toEqual({ tools: names, suggestion: 'payload_hash' })
  })

  it('suggests nothing for a name unlike any tool, and quotes at most 64 characters of it', () => {
    const error = new UnknownToolError('w'.repeat(100), ['payload_hash', 'payload_hmac'])
    expect(error.message).toBe(
      `Unknown tool: ${'w'.repeat(64)}…. The tools are payload_hash, payload_hmac (tools/list describes them).`,
    )
    expect(error.data).toEqual({ tools: ['payload_hash', 'payload_hmac'] })
  })
})
