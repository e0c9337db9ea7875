import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { echoTool } from '../../test/helpers/fakes.js'
import type { ToolDefinition } from '../tools/types.js'
import { hoistDefs, toolInputSchema } from './json-schema.js'

describe('hoistDefs', () => {
  it('moves $defs out, renames them and rewrites every reference', () => {
    const json: z.ZodType = z.lazy(() =>
      z.union([z.string(), z.array(json), z.record(z.string(), json)]),
    )
    const schema = z.toJSONSchema(z.object({ value: json }).strict(), {
      target: 'draft-2020-12',
    }) as Record<string, unknown>
    expect(schema.$defs).toBeDefined()

    const { root, defs, selfReferenced } = hoistDefs(schema, 'Doc', '#/components/schemas/')

    expect(selfReferenced).toBe(false)
    expect(root).toEqual({
      type: 'object',
      properties: { value: { $ref: '#/components/schemas/Doc_schema0' } },
      required: ['value'],
      additionalProperties: false,
    })
    expect(defs).toEqual({
      Doc_schema0: {
        anyOf: [
          { type: 'string' },
          { type: 'array', items: { $ref: '#/components/schemas/Doc_schema0' } },
          {
            type: 'object',
            propertyNames: { type: 'string' },
            additionalProperties: { $ref: '#/components/schemas/Doc_schema0' },
          },
        ],
      },
    })
  })

  it('rewrites a self-reference of the root and reports it', () => {
    const { root, selfReferenced } = hoistDefs(
      { type: 'array', items: { $ref: '#' } },
      'Tree',
      '#/$defs/',
    )
    expect(selfReferenced).toBe(true)
    expect(root).toEqual({ type: 'array', items: { $ref: '#/$defs/Tree' } })
  })

  it('leaves data keywords alone but rewrites properties named like them', () => {
    const schema = {
      type: 'object',
      default: { $ref: '#/$defs/x' },
      examples: [{ $ref: '#/$defs/x' }],
      properties: {
        default: { $ref: '#/$defs/x' },
        const: { $ref: '#/$defs/a~1b' },
      },
      $defs: { x: { type: 'string' }, 'a/b': { type: 'number' } },
    }
    const { root, defs } = hoistDefs(schema, 'T', '#/$defs/')
    expect(root).toEqual({
      type: 'object',
      default: { $ref: '#/$defs/x' },
      examples: [{ $ref: '#/$defs/x' }],
      properties: {
        default: { $ref: '#/$defs/T_x' },
        const: { $ref: '#/$defs/T_a_b' },
      },
    })
    expect(Object.keys(defs)).toEqual(['T_x', 'T_a_b'])
  })
})

describe('toolInputSchema', () => {
  it('is the schema of the body as sent, defaults optional', () => {
    const tool = {
      ...echoTool,
      input: z.object({ text: z.string(), upper: z.boolean().default(true) }).strict(),
    } as unknown as ToolDefinition
    expect(toolInputSchema(tool)).toEqual({
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { text: { type: 'string' }, upper: { default: true, type: 'boolean' } },
      required: ['text'],
      additionalProperties: false,
    })
  })

  it('refuses a non-object input schema (a JSON body; MCP requires type: object)', () => {
    expect(() => toolInputSchema({ ...echoTool, input: z.string() } as ToolDefinition)).toThrow(
      'MCP tool payload_echo: the input schema must be a JSON object schema',
    )
  })
})
