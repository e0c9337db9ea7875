import { dereference, type Schema } from '@cfworker/json-schema'
import { ToolError } from '../types.js'
import type { SchemaNode, SchemaObject } from './scan.js'

/** URI of every (sub)schema, as built by @cfworker/json-schema's `dereference`. */
export type SchemaLookup = Record<string, Schema | boolean>

// Keywords that apply their subschemas to the same instance location: a cycle through only these
// (and $ref) never reaches a smaller part of the instance, so evaluation would never end.
const IN_PLACE_SINGLE = ['not', 'if', 'then', 'else'] as const
const IN_PLACE_ARRAY = ['allOf', 'anyOf', 'oneOf'] as const

function absoluteRef(node: SchemaObject): string | undefined {
  return (node as Schema).__absolute_ref__
}

/**
 * Resolves every `$ref` of a scanned schema copy and rejects reference cycles that would make
 * evaluation loop forever (e.g. `{"$ref": "#"}`), which JSON Schema 2020-12 section 9.4.1 asks
 * implementations to detect. Uses @cfworker/json-schema's own URI resolution, so `$id` and
 * `$anchor` behave exactly as during evaluation.
 *
 * @example const lookup = resolveRefs(scanned.schema, scanned.nodes)
 * @throws {ToolError} `invalid_schema` (duplicate or malformed `$id`), `unresolved_ref`
 *   `{ ref, schemaLocation }`, `ref_cycle` `{ schemaLocation }`
 */
export function resolveRefs(schema: SchemaObject, nodes: SchemaNode[]): SchemaLookup {
  let lookup: SchemaLookup
  try {
    lookup = dereference(schema as Schema)
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error)
    throw new ToolError(
      'invalid_schema',
      `cannot index the schema's $id and $anchor values: ${message}`,
    )
  }
  for (const { node, location } of nodes) {
    const uri = absoluteRef(node)
    if (uri !== undefined && lookup[uri] === undefined) {
      throw new ToolError(
        'unresolved_ref',
        `"$ref" ${JSON.stringify(node.$ref)} at ${location || 'the schema root'} does not point to a subschema`,
        { ref: node.$ref, schemaLocation: `${location}/$ref` },
      )
    }
  }
  assertNoInPlaceCycle(nodes, lookup)
  return lookup
}

function inPlaceTargets(node: SchemaObject, lookup: SchemaLookup): SchemaObject[] {
  const targets: unknown[] = []
  for (const key of IN_PLACE_SINGLE) targets.push(node[key])
  for (const key of IN_PLACE_ARRAY) {
    const list = node[key]
    if (Array.isArray(list)) targets.push(...list)
  }
  const dependent = node.dependentSchemas
  if (dependent && typeof dependent === 'object') targets.push(...Object.values(dependent))
  const uri = absoluteRef(node)
  if (uri !== undefined) targets.push(lookup[uri])
  return targets.filter(
    (t): t is SchemaObject => typeof t === 'object' && t !== null && !Array.isArray(t),
  )
}

function assertNoInPlaceCycle(nodes: SchemaNode[], lookup: SchemaLookup): void {
  const locationOf = new Map(nodes.map(({ node, location }) => [node, location]))
  // 1 = on the current DFS path, 2 = finished. Iterative: chains of refs can be long.
  const state = new Map<SchemaObject, 1 | 2>()
  for (const { node: root } of nodes) {
    if (state.has(root)) continue
    const stack: Array<{ node: SchemaObject; next: SchemaObject[] }> = [
      { node: root, next: inPlaceTargets(root, lookup) },
    ]
    state.set(root, 1)
    while (stack.length > 0) {
      const top = stack[stack.length - 1] as { node: SchemaObject; next: SchemaObject[] }
      const child = top.next.pop()
      if (!child) {
        state.set(top.node, 2)
        stack.pop()
        continue
      }
      const seen = state.get(child)
      if (seen === 1) {
        const location = locationOf.get(child) ?? ''
        throw new ToolError(
          'ref_cycle',
          `the subschema at ${location || 'the schema root'} refers back to itself without descending into the value, so validation would never end`,
          { schemaLocation: location },
        )
      }
      if (seen === undefined) {
        state.set(child, 1)
        stack.push({ node: child, next: inPlaceTargets(child, lookup) })
      }
    }
  }
}
