import fc from 'fast-check'
import { MAX_JSON_DEPTH } from '../../../src/tools/limits.js'
import type { JsonSchema, ToolDefinition } from '../../../src/tools/types.js'
import { arbitraryFromSchema, inputFields, inputSchemaOf } from './from-schema.js'
import {
  deepNode,
  depthsAround,
  type JsonNode,
  nastyKey,
  nastyNode,
  nodeOf,
  renderJson,
  scalarNode,
  sizedString,
  str,
} from './json.js'

/** How a case was made; counted per tool to show how many reach `run`. */
export type CaseKind =
  | 'valid'
  | 'wrong_type'
  | 'missing_field'
  | 'extra_key'
  | 'nested_key'
  | 'duplicate_key'
  | 'sized'
  | 'many_lines'
  | 'deep'
  | 'random'

/** One fuzz case: a request body as raw JSON text, and how it was made. */
export interface FuzzCase {
  kind: CaseKind
  /** JSON text; `JSON.parse` of it is what the HTTP adapter hands to the gate. */
  text: string
}

/** What a tool's generator `test/helpers/arbitraries/<id>.ts` exports. */
interface ToolArbitraries {
  /** Request bodies that pass the tool's Zod schema and exercise its logic. */
  validInputs: fc.Arbitrary<unknown>
  /** Fields matched against caller-supplied regular expressions: never given huge strings. */
  regexMatchedFields?: readonly string[]
}

/**
 * The tool's own valid-input generator (`test/helpers/arbitraries/<id>.ts`), when it has one. Found by
 * the tool's id, so that a new tool needs no edit here; without one, inputs derived from its
 * JSON Schema and its examples still reach `run`.
 */
export async function toolArbitraries(tool: ToolDefinition): Promise<ToolArbitraries | undefined> {
  try {
    return (await import(`../arbitraries/${tool.id}.ts`)) as ToolArbitraries
  } catch (error) {
    // Vite turns this import into a map of the files that exist and throws this for others.
    if (String(error).includes('Unknown variable dynamic import')) return undefined
    if ((error as { code?: string }).code === 'ERR_MODULE_NOT_FOUND') return undefined
    throw error
  }
}

/**
 * Valid request bodies of a tool: its examples, values derived from its input JSON Schema, and
 * its own generator (weighted highest) when it has one.
 */
export async function validInputs(tool: ToolDefinition): Promise<fc.Arbitrary<unknown>> {
  const own = await toolArbitraries(tool)
  const sources: Array<fc.WeightedArbitrary<unknown>> = [
    { arbitrary: fc.constantFrom(...(tool.examples as unknown[])), weight: 1 },
    { arbitrary: arbitraryFromSchema(inputSchemaOf(tool)), weight: 2 },
  ]
  if (own) sources.push({ arbitrary: own.validInputs, weight: 5 })
  return fc.oneof(...sources)
}

const entriesOf = (node: JsonNode): Array<[string, JsonNode]> =>
  node.t === 'obj' ? [...node.entries] : []

/**
 * Every kind of bad (and good) request body for a tool, biased towards the nasty cases: wrong
 * types, missing and extra fields (`__proto__`, `constructor`), duplicate keys, strings at and
 * just over each field's size limit, 10,000 lines and one more, nesting around and far beyond
 * MAX_JSON_DEPTH, number literals such as 1e400, -0 and 2^53+1, lone surrogates; about 40% are
 * valid bodies, so that a good share reaches `run`.
 */
export async function toolCases(tool: ToolDefinition): Promise<fc.Arbitrary<FuzzCase>> {
  const valid = (await validInputs(tool)).map(nodeOf)
  const short = new Set((await toolArbitraries(tool))?.regexMatchedFields ?? [])
  const fields = inputFields(tool)
  const fieldNames = fields.map(([name]) => name)
  const stringFields = fields.filter(
    ([name, schema]) => (schema.type === 'string' || !schema.type) && !short.has(name),
  )
  const make =
    (kind: CaseKind) =>
    (node: JsonNode): FuzzCase => ({ kind, text: renderJson(node) })

  const setField = (node: JsonNode, key: string, value: JsonNode): JsonNode => ({
    t: 'obj',
    entries: [...entriesOf(node).filter(([k]) => k !== key), [key, value]],
  })

  const wrongType = fc
    .tuple(valid, fc.constantFrom(...fieldNames), nastyNode)
    .map(([node, key, value]) => setField(node, key, value))
  const missing = fc.tuple(valid, fc.constantFrom(...fieldNames)).map(
    ([node, key]): JsonNode => ({
      t: 'obj',
      entries: entriesOf(node).filter(([k]) => k !== key),
    }),
  )
  const extra = fc
    .tuple(valid, nastyKey, nastyNode)
    .map(
      ([node, key, value]): JsonNode => ({ t: 'obj', entries: [...entriesOf(node), [key, value]] }),
    )
  // A nasty key inside a field that holds a JSON object (a schema, a pipeline input).
  const nested = fc.tuple(valid, nastyKey, nastyNode).map(([node, key, value]): JsonNode => {
    const entries = entriesOf(node)
    const at = entries.findIndex(([, v]) => v.t === 'obj')
    if (at === -1) return { t: 'obj', entries: [...entries, [key, value]] }
    const [name, inner] = entries[at] as [string, JsonNode]
    const copy = [...entries]
    copy[at] = [name, { t: 'obj', entries: [...entriesOf(inner), [key, value]] }]
    return { t: 'obj', entries: copy }
  })
  // The valid value last (JSON.parse keeps the last), so most reach `run`; or the nasty one last.
  const duplicate = fc
    .tuple(valid, fc.constantFrom(...fieldNames), scalarNode, fc.boolean())
    .map(([node, key, other, validLast]): JsonNode => {
      const entries = entriesOf(node)
      const kept = entries.find(([k]) => k === key)
      if (!kept) return { t: 'obj', entries: [...entries, [key, other], [key, other]] }
      return {
        t: 'obj',
        entries: validLast ? [[key, other], ...entries] : [...entries, [key, other]],
      }
    })
  const sized =
    stringFields.length === 0
      ? undefined
      : fc
          .tuple(valid, fc.constantFrom(...stringFields))
          .chain(([node, [key, schema]]) =>
            sizedString(limitOf(schema)).map((text) => setField(node, key, str(text))),
          )
  const manyLines =
    stringFields.length === 0
      ? undefined
      : fc
          .tuple(
            valid,
            fc.constantFrom(...stringFields),
            fc.constantFrom(9_999, 10_000, 10_001),
            fc.boolean(),
          )
          .map(([node, [key], lines, crlf]) =>
            setField(node, key, str((crlf ? 'l\r\n' : '\n').repeat(lines))),
          )
  const deep = fc
    .tuple(
      valid,
      fc.constantFrom(...fieldNames),
      depthsAround(MAX_JSON_DEPTH),
      fc.boolean(),
      scalarNode,
    )
    .map(([node, key, depth, asObject, leaf]) =>
      setField(node, key, deepNode(depth, leaf, asObject)),
    )
  const random = fc.oneof(
    nastyNode,
    depthsAround(MAX_JSON_DEPTH).map((depth) => deepNode(depth)),
  )

  const arbitraries: Array<fc.WeightedArbitrary<FuzzCase>> = [
    { arbitrary: valid.map(make('valid')), weight: 40 },
    { arbitrary: wrongType.map(make('wrong_type')), weight: 12 },
    { arbitrary: missing.map(make('missing_field')), weight: 4 },
    { arbitrary: extra.map(make('extra_key')), weight: 5 },
    { arbitrary: nested.map(make('nested_key')), weight: 4 },
    { arbitrary: duplicate.map(make('duplicate_key')), weight: 8 },
    { arbitrary: deep.map(make('deep')), weight: 6 },
    { arbitrary: random.map(make('random')), weight: 8 },
  ]
  if (sized) arbitraries.push({ arbitrary: sized.map(make('sized')), weight: 3 })
  if (manyLines) arbitraries.push({ arbitrary: manyLines.map(make('many_lines')), weight: 3 })
  return fc.oneof(...arbitraries)
}

/** The documented size limit of a string field: its JSON Schema maxLength, else 1 MiB. */
function limitOf(schema: JsonSchema): number {
  return typeof schema.maxLength === 'number' ? schema.maxLength : 1024 * 1024
}
