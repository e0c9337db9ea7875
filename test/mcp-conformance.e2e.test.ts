import { execFile } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type DevService, startDevService } from './helpers/service.js'

// The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, its CLI) against
// /mcp of the service on the devnet: every server scenario is classified below as run (and
// passing) or not applicable to a stateless, tools-only server with its own catalogue, and the
// whole suite runs in one CLI process with the not-applicable ones as its expected failures.
// On Node 20 the CLI loads through test/helpers/conformance/node20.mjs (it imports fs.globSync).

const execFileAsync = promisify(execFile)
const CLI = [
  '--import',
  './test/helpers/conformance/node20.mjs',
  'node_modules/@modelcontextprotocol/conformance/dist/index.js',
]

/** A check the suite reports: `[id, status]`; INFO checks (its request log) are left out. */
type Check = [id: string, status: 'SUCCESS' | 'WARNING' | 'FAILURE']

/** The scenarios that apply, each with its checks as they must come out. */
const APPLIES: Record<string, Check[]> = {
  'server-initialize': [['server-initialize', 'SUCCESS']],
  ping: [['ping', 'SUCCESS']],
  'tools-list': [['tools-list', 'SUCCESS']],
  'dns-rebinding-protection': [
    ['localhost-host-rebinding-rejected', 'SUCCESS'],
    ['localhost-host-valid-accepted', 'SUCCESS'],
  ],
}

/** Why a scenario does not apply, and the one check (not INFO) that shows it. */
interface NotApplicable {
  why: string
  /** `<status> <check id>: <its message>` of that check. */
  shows: RegExp
}

const NO_METHOD = /^FAILURE [\w-]+: Failed: MCP error -32601: Method not found$/
const TEST_TOOL =
  /^FAILURE [\w-]+: Failed: MCP error -32602: Unknown tool: test_\w+\. The tools are payload_hash,/
const everything = (tool: string, needs = ''): NotApplicable => ({
  why: `calls ${tool}, a tool of the suite's reference server, not of this catalogue${needs}`,
  shows: TEST_TOOL,
})
const noCapability = (capability: string): NotApplicable => ({
  why: `the server declares no ${capability} capability (tools only), so the method is -32601`,
  shows: NO_METHOD,
})
const STATELESS =
  '; it also needs a server-to-client request on an SSE stream, which a stateless server answering JSON never opens'

/** The scenarios that do not apply to this server, by name. */
const NOT_APPLICABLE: Record<string, NotApplicable> = {
  'logging-set-level': noCapability('logging (it sends no notifications)'),
  'completion-complete': noCapability('completions (no prompts or resource templates)'),
  'tools-call-simple-text': everything('test_simple_text'),
  'tools-call-image': everything('test_image_content'),
  'tools-call-audio': everything('test_audio_content'),
  'tools-call-embedded-resource': everything('test_embedded_resource'),
  'tools-call-mixed-content': everything('test_multiple_content_types'),
  'tools-call-error': everything('test_error_handling'),
  'tools-call-with-logging': noCapability('logging (it sends no notifications)'),
  'tools-call-with-progress': everything('test_tool_with_progress', STATELESS),
  'tools-call-sampling': everything('test_sampling', STATELESS),
  'tools-call-elicitation': everything('test_elicitation', STATELESS),
  'elicitation-sep1034-defaults': everything('test_elicitation_sep1034_defaults', STATELESS),
  'elicitation-sep1330-enums': everything('test_elicitation_sep1330_enums', STATELESS),
  'json-schema-2020-12': {
    why: "looks for json_schema_2020_12_tool, a tool of the suite's reference server (the catalogue's schemas are 2020-12 already)",
    shows:
      /^FAILURE json-schema-2020-12-tool-found: Tool 'json_schema_2020_12_tool' not found\. Available tools: payload_hash,/,
  },
  // SEP-1699 resumable SSE streams: the server answers JSON, never SSE, so the suite skips its
  // stream checks itself (an INFO) and warns that no session came, which its baseline counts.
  'server-sse-polling': {
    why: 'tests resumable SSE streams of a session; the server is stateless and answers JSON',
    shows:
      /^WARNING server-sse-polling-session: Server did not provide session ID - SSE polling tests may not work correctly$/,
  },
  'server-sse-multiple-streams': {
    why: 'tests several SSE streams of one session; the server is stateless and answers JSON',
    shows: /^WARNING server-sse-multiple-streams-session: /,
  },
  'resources-list': noCapability('resources'),
  'resources-read-text': noCapability('resources'),
  'resources-read-binary': noCapability('resources'),
  'resources-templates-read': noCapability('resources'),
  'resources-subscribe': noCapability('resources'),
  'resources-unsubscribe': noCapability('resources'),
  'prompts-list': noCapability('prompts'),
  'prompts-get-simple': noCapability('prompts'),
  'prompts-get-with-args': noCapability('prompts'),
  'prompts-get-embedded-resource': noCapability('prompts'),
  'prompts-get-with-image': noCapability('prompts'),
}

let dev: DevService
let dir: string
beforeAll(async () => {
  dev = await startDevService({ payers: 1, clock: { nowSeconds: () => 1_700_000_000 } })
  dir = mkdtempSync(join(tmpdir(), 'mcp-conformance-'))
})
afterAll(async () => {
  await dev?.stop()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

describe('@modelcontextprotocol/conformance server scenarios against /mcp', () => {
  it('classifies every server scenario the suite has', async () => {
    const { stdout } = await execFileAsync('node', [...CLI, 'list', '--server'])
    const listed = [...stdout.matchAll(/^ {2}- (\S+) \[/gm)].map((m) => m[1])
    expect(listed.sort()).toEqual([...Object.keys(APPLIES), ...Object.keys(NOT_APPLICABLE)].sort())
  })

  it('passes every scenario that applies; the others fail only for the reason named', async () => {
    const baseline = join(dir, 'not-applicable.yml')
    writeFileSync(
      baseline,
      `server:\n${Object.keys(NOT_APPLICABLE)
        .map((name) => `  - ${name}\n`)
        .join('')}`,
    )
    const out = join(dir, 'results')
    // Exit 0: every not-applicable scenario failed (a passing one would be a stale entry, exit
    // 1) and every other one passed.
    const cli = await execFileAsync(
      'node',
      [
        ...CLI,
        'server',
        '--url',
        `${dev.svc.baseUrl}/mcp`,
        '--suite',
        'all',
        '-o',
        out,
        '--expected-failures',
        baseline,
      ],
      { timeout: 150_000, maxBuffer: 16 * 1024 * 1024 },
    ).then(
      () => 0,
      (error: { code?: number }) => error.code ?? -1,
    )
    const checks = new Map<string, Check[]>()
    const lines = new Map<string, string[]>()
    for (const entry of readdirSync(out)) {
      const name = /^server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z$/.exec(entry)?.[1] as string
      const all = JSON.parse(readFileSync(join(out, entry, 'checks.json'), 'utf8')) as {
        id: string
        status: string
        errorMessage?: string
        details?: { message?: string }
      }[]
      const reported = all.filter((c) => c.status !== 'INFO')
      checks.set(
        name,
        reported.map((c) => [c.id, c.status] as Check),
      )
      lines.set(
        name,
        reported.map((c) => `${c.status} ${c.id}: ${c.errorMessage ?? c.details?.message ?? ''}`),
      )
    }
    for (const [name, expected] of Object.entries(APPLIES)) {
      expect(checks.get(name), name).toEqual(expected)
    }
    for (const [name, { shows }] of Object.entries(NOT_APPLICABLE)) {
      expect(lines.get(name), name).toEqual([expect.stringMatching(shows)])
    }
    expect(cli).toBe(0)
  }, 180_000)
})
