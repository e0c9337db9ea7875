import './helpers/fuzz/regexp-engine.js'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { catalog } from '../src/tools/catalog.js'
import { type ToolDefinition, ToolError } from '../src/tools/types.js'
import { safeParseUntrusted } from '../src/tools/untrusted-parse.js'
import { isToolErrorCode } from './helpers/error-codes.js'
import { echoTool } from './helpers/fakes.js'
import { expectJsonSafe, expectPreserved } from './helpers/fuzz/checks.js'
import { FUZZ_RUNS, fuzzParameters, fuzzTimeout } from './helpers/fuzz/config.js'
import { type CaseKind, type FuzzCase, toolArbitraries, toolCases } from './helpers/fuzz/inputs.js'
import { fixedEnv } from './helpers/tools.js'

// Property-based fuzzing of every catalogue tool on the path the payment gate takes:
// `safeParseUntrusted(tool.input, JSON.parse(body))` (Zod's safeParse, src/tools/untrusted-parse.ts),
// then `tool.run(parsed, env)` with a fixed clock.
// FUZZ_RUNS cases per tool (1,000 in `npm test`, 10,000 in `npm run fuzz`), FUZZ_SEED to replay.

/** Bodies longer than this (characters of JSON text) are run once, not twice. */
const HUGE = 512 * 1024

type Outcome = 'rejected' | 'tool_error' | 'ok'

/** The outcome of one case, failing the property on anything the gate could not map to a 400. */
function runCase(
  tool: ToolDefinition,
  text: string,
): { outcome: Outcome; result?: unknown; error?: ToolError } {
  const input: unknown = JSON.parse(text)
  const parsed = safeParseUntrusted(tool.input, input)
  if (!parsed.success) {
    expect(parsed.error.issues.length).toBeGreaterThan(0)
    return { outcome: 'rejected' }
  }
  expectPreserved(input, parsed.data)
  try {
    return { outcome: 'ok', result: tool.run(parsed.data, fixedEnv) }
  } catch (error) {
    if (!(error instanceof ToolError)) throw error
    expect(isToolErrorCode(error.code), `undocumented tool code ${error.code}`).toBe(true)
    return { outcome: 'tool_error', error }
  }
}

/**
 * text-diff may set `approximate` when its time budget runs out (documented in docs/tools.md as
 * the one exception to determinism besides jwt-inspect's clock, which is fixed here).
 */
const mayDiffer = (result: unknown) => (result as { approximate?: unknown }).approximate === true

describe.each(catalog.map((tool) => [tool.id, tool] as const))('fuzzing %s run', (_id, tool) => {
  it(
    'never throws anything but a documented ToolError, keeps the input intact, and is deterministic',
    async () => {
      const cases = await toolCases(tool)
      const counts: Record<Outcome, number> = { rejected: 0, tool_error: 0, ok: 0 }
      const kinds = new Map<CaseKind, number>()
      fc.assert(
        fc.property(cases, ({ kind, text }: FuzzCase) => {
          const first = runCase(tool, text)
          counts[first.outcome]++
          kinds.set(kind, (kinds.get(kind) ?? 0) + 1)
          if (first.outcome === 'ok') {
            const conforms = tool.output.safeParse(first.result).success
            expect(conforms, 'the result does not match the output schema').toBe(true)
            expectJsonSafe(first.result)
          }
          // Bodies near the 1 MiB limit are there to probe the limits; running them twice would
          // double the suite's time without reaching other code.
          if (text.length > HUGE) return
          const second = runCase(tool, text)
          expect(second.outcome).toBe(first.outcome)
          if (first.outcome === 'tool_error') {
            expect([second.error?.code, second.error?.message]).toEqual([
              first.error?.code,
              first.error?.message,
            ])
          }
          if (first.outcome !== 'ok' || mayDiffer(first.result) || mayDiffer(second.result)) return
          expect(JSON.stringify(second.result)).toBe(JSON.stringify(first.result))
        }),
        fuzzParameters(`${tool.id} run`, FUZZ_RUNS),
      )
      console.log(
        `[fuzz] ${tool.id} run outcomes: ${JSON.stringify(counts)}; kinds: ${JSON.stringify(Object.fromEntries(kinds))}`,
      )
      // A good share must get past the schema, or the fuzzer would only be testing Zod.
      expect(counts.ok + counts.tool_error).toBeGreaterThanOrEqual(FUZZ_RUNS * 0.3)
      expect(counts.ok).toBeGreaterThanOrEqual(FUZZ_RUNS * 0.1)
    },
    fuzzTimeout(60_000),
  )
})

describe('fuzz generators', () => {
  // Found by the tool's id in test/helpers/arbitraries/: a misplaced file would silently fall back
  // to schema-derived inputs only.
  it.each(catalog.map((tool) => [tool.id, tool] as const))(
    '%s has its own generator of valid inputs',
    async (_id, tool) => {
      const own = await toolArbitraries(tool)
      expect(own?.validInputs).toBeDefined()
      for (const input of fc.sample(own?.validInputs ?? fc.constant(null), {
        numRuns: 20,
        seed: 1,
      })) {
        expect(safeParseUntrusted(tool.input, input).success).toBe(true)
      }
    },
  )
})

describe('fuzz inputs of a tool without its own generator', () => {
  it('still reach run, from its JSON Schema and examples', async () => {
    const tool = echoTool as ToolDefinition
    expect(await toolArbitraries(tool)).toBeUndefined()
    const samples = fc.sample(await toolCases(tool), { numRuns: 200, seed: 1 })
    const reached = samples.filter(({ text }) => tool.input.safeParse(JSON.parse(text)).success)
    expect(reached.length).toBeGreaterThan(40)
  })
})
