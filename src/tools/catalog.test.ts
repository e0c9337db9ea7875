import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { fixedEnv } from '../../test/helpers/tools.js'
import { catalog, findToolByMcpName, findToolByPath } from './catalog.js'

// SPEC section 4.1, row by row.
const SPEC_4_1 = [
  ['hash', '/hash', 'payload_hash', 'hash', '1000'],
  ['base64', '/base64', 'payload_base64', 'base64', '1000'],
  ['hmac', '/hmac', 'payload_hmac', 'hmac', '1000'],
  ['json-validate', '/json-validate', 'payload_json_validate', 'json_validate', '1000'],
  ['jwt-inspect', '/jwt-inspect', 'payload_jwt_inspect', 'jwt_inspect', '1000'],
  ['text-diff', '/text-diff', 'payload_text_diff', 'text_diff', '1000'],
  ['pipeline', '/pipeline', 'payload_pipeline', 'pipeline', '3000'],
  ['payload-inspect', '/payload-inspect', 'payload_inspect', 'payload_inspect', '3000'],
] as const

// SPEC section 2.2: required request fields and defaults.
const REQUIRED: Record<string, string[]> = {
  hash: [],
  base64: ['mode'],
  hmac: ['secret'],
  'json-validate': ['value', 'schema'],
  'jwt-inspect': ['token'],
  'text-diff': [],
  pipeline: ['input', 'operations'],
  'payload-inspect': ['input'],
}

const inputSchemaOf = (schema: z.ZodType) =>
  z.toJSONSchema(schema, { target: 'draft-2020-12', io: 'input' }) as {
    type: string
    required?: string[]
    additionalProperties: boolean
    properties: Record<string, { default?: unknown; enum?: unknown[] }>
  }

describe('catalog', () => {
  it('lists the eight tools in SPEC 4.1 order with their names and prices', () => {
    expect(catalog.map((t) => [t.id, t.path, t.mcpName, t.operationId, t.price])).toEqual(SPEC_4_1)
  })

  it('finds tools by path and MCP name', () => {
    for (const tool of catalog) {
      expect(findToolByPath(tool.path)).toBe(tool)
      expect(findToolByMcpName(tool.mcpName)).toBe(tool)
    }
    expect(findToolByPath('/hash/')).toBeUndefined()
    expect(findToolByPath('/stats')).toBeUndefined()
    expect(findToolByMcpName('payload_unknown')).toBeUndefined()
  })

  it('has a title, description, limits and at least one example per tool', () => {
    for (const tool of catalog) {
      expect(tool.title.length, tool.id).toBeGreaterThan(0)
      expect(tool.description.length, tool.id).toBeGreaterThan(20)
      expect(tool.limits.length, tool.id).toBeGreaterThan(0)
      expect(tool.examples.length, tool.id).toBeGreaterThan(0)
    }
  })

  it('converts every input schema to a strict JSON Schema with the SPEC 2.2 required fields', () => {
    for (const tool of catalog) {
      const schema = inputSchemaOf(tool.input)
      expect(schema.type, tool.id).toBe('object')
      expect(schema.additionalProperties, tool.id).toBe(false)
      expect(schema.required ?? [], tool.id).toEqual(REQUIRED[tool.id])
    }
  })

  it('documents the SPEC 2.2 defaults in the JSON Schemas', () => {
    const byId = (id: string) => inputSchemaOf(findToolByPath(`/${id}`)?.input as z.ZodType)
    expect(byId('hash').properties.input?.default).toBe('')
    expect(byId('hash').properties.algorithm).toMatchObject({
      default: 'SHA-256',
      enum: ['SHA-256', 'SHA-384', 'SHA-512'],
    })
    expect(byId('base64').properties.input?.default).toBe('')
    expect(byId('hmac').properties.algorithm?.default).toBe('SHA-256')
    expect(byId('text-diff').properties.before?.default).toBe('')
    expect(byId('text-diff').properties.after?.default).toBe('')
  })

  it('converts every output schema to JSON Schema', () => {
    for (const tool of catalog) {
      const schema = z.toJSONSchema(tool.output, { target: 'draft-2020-12' })
      expect(schema.$schema, tool.id).toBe('https://json-schema.org/draft/2020-12/schema')
    }
  })

  it('runs every example: it parses as input and its result parses as output', () => {
    for (const tool of catalog) {
      for (const example of tool.examples) {
        const input = tool.input.parse(example)
        const result = tool.run(input, fixedEnv)
        expect(tool.output.safeParse(result).success, `${tool.id} ${JSON.stringify(example)}`).toBe(
          true,
        )
      }
    }
  })

  it('rejects unknown request keys on every tool', () => {
    for (const tool of catalog) {
      const body = { ...(tool.examples[0] as object), unexpected: true }
      expect(tool.input.safeParse(body).success, tool.id).toBe(false)
    }
  })

  it('rejects outputs of the wrong shape, so the output check above can fail', () => {
    for (const tool of catalog) {
      expect(tool.output.safeParse({}).success, tool.id).toBe(false)
    }
  })
})
