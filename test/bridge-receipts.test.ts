import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { applyDefaults, canonicalSha256 } from '../clients/mcp-bridge/src/receipts.js'
import { listTool } from '../src/descriptions/mcp/listing.js'
import { checkedInput } from '../src/runner/check.js'
import { catalog } from '../src/tools/catalog.js'
import { fuzzParameters, scaledRuns } from './helpers/fuzz/config.js'
import { validInputs } from './helpers/fuzz/inputs.js'

// The bridge (clients/mcp-bridge, which imports nothing of the service) computes the input digest
// of a delivery receipt from the arguments it sent and the tool's listed input schema: it applies
// the schema defaults, as the service's Zod schema does. The two must agree for every tool and
// every valid body, or the bridge would withhold results it paid for. The body as sent has its
// defaulted fields left out at random, so that the defaults are exercised.

describe.each(catalog.map((tool) => [tool.id, tool] as const))(
  'the bridge input digest of %s',
  (_id, tool) => {
    const listed = listTool(tool, [])

    it('equals the service digest (Zod parse, RFC 8785) for every valid body', async () => {
      const bodies = (await validInputs(tool)).chain((body) =>
        fc
          .subarray(Object.keys(body as object))
          .map((dropped) =>
            Object.fromEntries(
              Object.entries(body as object).filter(([key]) => !dropped.includes(key)),
            ),
          ),
      )
      let checked = 0
      fc.assert(
        fc.property(bodies, (body) => {
          const parsed = tool.input.safeParse(body)
          if (!parsed.success) return
          checked++
          expect(canonicalSha256(applyDefaults(listed.inputSchema, body))).toBe(
            checkedInput(parsed.data).digest,
          )
        }),
        fuzzParameters(`bridge input digest ${tool.id}`, scaledRuns(200)),
      )
      expect(checked).toBeGreaterThan(0)
    }, 60_000)
  },
)
