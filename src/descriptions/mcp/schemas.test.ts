import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { echoTool } from '../../../test/helpers/fakes.js'
import type { ToolDefinition } from '../../tools/types.js'
import { toolOutputSchema } from './schemas.js'

type Tree = { label: string; children: Tree[] }
const tree: z.ZodType<Tree> = z.lazy(() => z.object({ label: z.string(), children: z.array(tree) }))
const treeTool = {
  ...echoTool,
  input: z.object({ root: tree }).strict(),
  output: z.object({ root: tree }),
} as unknown as ToolDefinition

describe('tool schemas', () => {
  it('hoists $defs of a recursive result schema to the root its $refs point at', () => {
    const schema = toolOutputSchema(treeTool)
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema')
    expect(schema.type).toBe('object')
    const defs = schema.$defs as Record<string, unknown>
    expect(Object.keys(defs)).toHaveLength(1)
    const [name] = Object.keys(defs)
    const success = (schema.anyOf as { properties: Record<string, unknown> }[])[0]
    expect(success?.properties.result).toEqual({
      type: 'object',
      properties: { root: { $ref: `#/$defs/${name}` } },
      required: ['root'],
      additionalProperties: false,
    })
  })

  it('validates with the MCP client validator: success, PaymentRequired and failure shapes', () => {
    const validate = new AjvJsonSchemaValidator().getValidator(toolOutputSchema(treeTool))
    const leaf = { label: 'b', children: [] }
    expect(validate({ ok: true, result: { root: { label: 'a', children: [leaf] } } }).valid).toBe(
      true,
    )
    expect(validate({ ok: true, result: { root: { label: 'a', children: [{}] } } }).valid).toBe(
      false,
    )
    expect(validate({ x402Version: 2, error: 'Payment required', accepts: [] }).valid).toBe(true)
    expect(validate({ ok: false, error: 'bad', code: 'invalid_request' }).valid).toBe(true)
    expect(validate({ ok: false, error: 'no code' }).valid).toBe(false)
  })
})
