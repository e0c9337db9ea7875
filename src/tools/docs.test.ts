import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { fixedEnv } from '../../test/helpers/tools.js'
import { catalog } from './catalog.js'
import { SUPPORTED_KEYWORDS } from './json-validate/index.js'

/**
 * docs/tools.md must show what the tools really do: every example there is re-run here (with the
 * fixed clock the page names) and compared with the printed response.
 */
const doc = readFileSync(new URL('../../docs/tools.md', import.meta.url), 'utf8')

const EXAMPLE =
  /<!-- example: ([a-z0-9-]+) -->\nRequest \(`POST (\/[a-z0-9-]+)`\):\n\n```json\n([\s\S]*?)\n```\n\nResponse \(200\):\n\n```json\n([\s\S]*?)\n```/g

const examples = new Map(
  [...doc.matchAll(EXAMPLE)].map(([, id, path, request, response]) => [
    id as string,
    { path, request: JSON.parse(request as string), response: JSON.parse(response as string) },
  ]),
)

describe('docs/tools.md', () => {
  it('names the fixed clock used for the examples', () => {
    expect(doc).toContain(`clock fixed at \`${fixedEnv.nowSeconds()}\``)
  })

  it('has one example per tool, in catalogue order', () => {
    expect([...examples.keys()]).toEqual(catalog.map((tool) => tool.id))
  })

  for (const tool of catalog) {
    it(`${tool.id}: the example is the canonical one and its response is what the tool returns`, () => {
      const example = examples.get(tool.id)
      expect(example?.path).toBe(tool.path)
      expect(example?.request).toEqual(tool.examples[0])
      const result = tool.run(tool.input.parse(example?.request), fixedEnv)
      expect(example?.response).toEqual({ ok: true, result })
    })
  }

  it('lists exactly the supported JSON Schema keywords', () => {
    const section = /<!-- supported-keywords -->([\s\S]*?)<!-- \/supported-keywords -->/.exec(doc)
    const listed = [...(section?.[1] ?? '').matchAll(/`([$a-zA-Z]+)`/g)].map((m) => m[1])
    expect([...listed].sort()).toEqual([...SUPPORTED_KEYWORDS].sort())
  })

  it('documents every tool with a section, its path and MCP name', () => {
    for (const tool of catalog) {
      expect(doc).toContain(`\n## ${tool.id}\n`)
      expect(doc).toContain(`\`POST ${tool.path}\``)
      expect(doc).toContain(`\`${tool.mcpName}\``)
    }
  })
})
