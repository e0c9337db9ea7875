import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { describe, expect, it } from 'vitest'

// `npm run dev` where litesvm's native binary is absent (as on a platform the registry has no
// build for): a preload makes every `litesvm-<platform>` package and `.node` file unresolvable,
// as npm's skipped optional dependency leaves them. The demo must say so and stop, before it
// starts any chain.

const ROOT = fileURLToPath(new URL('..', import.meta.url))

const HIDE_LITESVM = `
const Module = require('node:module')
const resolve = Module._resolveFilename
Module._resolveFilename = function (request, ...rest) {
  if (/^litesvm-/.test(request) || /litesvm\\.[\\w-]+\\.node$/.test(request)) {
    const error = new Error("Cannot find module '" + request + "'")
    error.code = 'MODULE_NOT_FOUND'
    throw error
  }
  return resolve.call(this, request, ...rest)
}
`

describe('npm run dev without litesvm', () => {
  it('says why the Solana VM cannot start and exits 1, starting nothing', async () => {
    const hook = join(mkdtempSync(join(tmpdir(), 'no-litesvm-')), 'hide-litesvm.cjs')
    writeFileSync(hook, HIDE_LITESVM)
    const failed = await promisify(execFile)('npm', ['run', '-s', 'dev'], {
      cwd: ROOT,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '',
        NODE_OPTIONS: `--require ${hook}`,
      },
      timeout: 60_000,
    }).then(
      () => undefined,
      (error: { code?: number; stdout?: string; stderr?: string }) => error,
    )
    expect(failed?.code).toBe(1)
    expect(failed?.stdout).toBe('')
    expect(failed?.stderr).toMatch(
      new RegExp(
        `^npm run dev: the local Solana VM \\(litesvm\\) cannot load on ${process.platform}-${process.arch}: its native binary is not installed \\(no \`litesvm-${process.platform}-${process.arch}[\\w-]*\` in node_modules\\)\\.\\n`,
      ),
    )
    expect(failed?.stderr).not.toContain('npm/cli/issues/4828')
  }, 90_000)
})
