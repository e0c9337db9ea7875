import { spawnSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterEach, describe, expect, it } from 'vitest'

// `npm start` runs the build and never compiles: its `prestart` (scripts/built.mjs) in a project
// without a build, with a fresh one, and with one older than its sources.

const SCRIPT = fileURLToPath(new URL('../scripts/built.mjs', import.meta.url))
const dirs: string[] = []
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true })
})

function project(files: Record<string, number>): string {
  const dir = mkdtempSync(join(tmpdir(), 'start-script-'))
  dirs.push(dir)
  for (const [file, mtime] of Object.entries(files)) {
    mkdirSync(join(dir, file, '..'), { recursive: true })
    writeFileSync(join(dir, file), '')
    utimesSync(join(dir, file), mtime, mtime)
  }
  return dir
}

const check = (cwd: string) => spawnSync(process.execPath, [SCRIPT], { cwd, encoding: 'utf8' })

describe('npm start', () => {
  it('refuses to start without a build, saying how to make one', () => {
    const run = check(project({ 'src/main.ts': 1000 }))
    expect([run.status, run.stderr]).toEqual([
      1,
      'npm start: dist/main.js is missing; build it once with `npm run build`\n',
    ])
  })

  it('starts a build newer than its sources without a word', () => {
    const run = check(project({ 'src/main.ts': 1000, 'dist/main.js': 2000 }))
    expect([run.status, run.stderr]).toEqual([0, ''])
  })

  it('starts a build older than its sources, and says so', () => {
    const run = check(project({ 'src/http/app.ts': 3000, 'dist/main.js': 2000 }))
    expect([run.status, run.stderr]).toEqual([
      0,
      'npm start: src/ changed after dist/ was built; starting the build as it is (`npm run build` to rebuild)\n',
    ])
  })
})
