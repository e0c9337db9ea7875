import { readdirSync, readFileSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { jsonValidateTool } from '../src/tools/json-validate/index.js'
import { scanSchema } from '../src/tools/json-validate/scan.js'
import { ToolError } from '../src/tools/types.js'

/**
 * Runs the official JSON-Schema-Test-Suite (draft 2020-12, top-level files, not optional/;
 * vendored in test/fixtures/json-schema-test-suite/ with its licence)
 * against json-validate. A group runs when its schema is an object using only supported keywords
 * and local references; every case of a running group must match the suite's `valid`.
 */
const suiteDir = new URL('./fixtures/json-schema-test-suite/tests/draft2020-12/', import.meta.url)

interface SuiteCase {
  description: string
  data: unknown
  valid: boolean
}
interface SuiteGroup {
  description: string
  schema: unknown
  tests: SuiteCase[]
}

const UNSUPPORTED = new Set(['unsupported_keyword', 'unsupported_ref', 'unsupported_dialect'])

/** Why a group cannot run, or undefined when it can. */
function skipReason(schema: unknown): string | undefined {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) {
    return 'root schema is not an object'
  }
  try {
    scanSchema(schema as Record<string, unknown>)
    return undefined
  } catch (error) {
    if (error instanceof ToolError && UNSUPPORTED.has(error.code)) return error.code
    throw error
  }
}

const files = readdirSync(suiteDir)
  .filter((name) => name.endsWith('.json'))
  .sort()
const suite = files.map((file) => ({
  file,
  groups: JSON.parse(readFileSync(new URL(file, suiteDir), 'utf8')) as SuiteGroup[],
}))

const totals = { groups: 0, cases: 0, groupsRun: 0, casesRun: 0, groupsSkipped: 0 }
const skippedBy = new Map<string, number>()
const planned = suite.map(({ file, groups }) => ({
  file,
  groups: groups.map((group) => {
    const reason = skipReason(group.schema)
    totals.groups++
    totals.cases += group.tests.length
    if (reason) {
      totals.groupsSkipped++
      skippedBy.set(reason, (skippedBy.get(reason) ?? 0) + 1)
    } else {
      totals.groupsRun++
      totals.casesRun += group.tests.length
    }
    return { group, reason }
  }),
}))

let casesExecuted = 0

describe('JSON-Schema-Test-Suite draft2020-12', () => {
  it('found the suite', () => {
    expect(files.length).toBeGreaterThan(30)
    expect(totals.groups).toBeGreaterThan(300)
  })

  for (const { file, groups } of planned) {
    if (groups.every(({ reason }) => reason)) continue
    describe(file, () => {
      for (const { group, reason } of groups) {
        if (reason) continue
        it(group.description, () => {
          for (const testCase of group.tests) {
            const body = jsonValidateTool.input.parse({
              value: testCase.data,
              schema: group.schema,
            })
            const result = jsonValidateTool.run(body, { nowSeconds: () => 0 })
            expect(result.valid, testCase.description).toBe(testCase.valid)
            expect(result.error_count === 0, testCase.description).toBe(testCase.valid)
            casesExecuted++
          }
        })
      }
    })
  }

  afterAll(() => {
    const skipped = [...skippedBy].map(([reason, n]) => `${reason}: ${n}`).join(', ')
    console.log(
      `JSON-Schema-Test-Suite draft2020-12: ${totals.groupsRun}/${totals.groups} groups and ` +
        `${totals.casesRun}/${totals.cases} cases ran; ${totals.groupsSkipped} groups skipped as unsupported (${skipped}); ` +
        `${casesExecuted} cases executed`,
    )
  })

  it('ran at least 70% of the groups, and every case of every running group', () => {
    expect(totals.groupsRun + totals.groupsSkipped).toBe(totals.groups)
    expect(totals.groupsRun / totals.groups).toBeGreaterThanOrEqual(0.7)
    expect(casesExecuted).toBe(totals.casesRun)
  })
})
