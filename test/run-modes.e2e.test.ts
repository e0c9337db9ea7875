import { execFile } from 'node:child_process'
import {
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import ts from 'typescript'
import { afterAll, describe, expect, it } from 'vitest'

// The tool worker must load however the service runs: vitest runs the sources (every runner test),
// `npm run dev` runs them with the tsx CLI, and `npm start` runs the JavaScript tsc emits into
// dist/. Each child here runs the hash and the nested-quantifier pattern through a real pool.

const run = promisify(execFile)
const ROOT = fileURLToPath(new URL('..', import.meta.url))
const PROBE = join(ROOT, 'test/fixtures/run-modes-probe.mjs')
const EXPECTED = {
  hex: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad',
  valid: false,
}
const temp = mkdtempSync(join(tmpdir(), 'run-modes-'))
afterAll(() => rmSync(temp, { recursive: true, force: true }))

/** Every non-test .ts file under src/. */
function sources(dir = join(ROOT, 'src')): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return sources(path)
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : []
  })
}

/**
 * src/ as `npm start` gets it: each module emitted by the TypeScript compiler with the project's
 * options (tsconfig.build.json), without the type check that makes `tsc` take 20 s here.
 */
function emitDist(out: string): void {
  const { config } = ts.readConfigFile(join(ROOT, 'tsconfig.json'), ts.sys.readFile)
  const { options } = ts.convertCompilerOptionsFromJson(config.compilerOptions, ROOT)
  for (const file of sources()) {
    // NodeNext picks the format from the nearest package.json, which transpileModule cannot see;
    // ours says "type": "module", so tsc emits ES modules.
    const { outputText } = ts.transpileModule(readFileSync(file, 'utf8'), {
      compilerOptions: { ...options, module: ts.ModuleKind.ESNext },
      fileName: file,
    })
    const target = join(out, relative(join(ROOT, 'src'), file)).replace(/\.ts$/, '.js')
    mkdirSync(dirname(target), { recursive: true })
    writeFileSync(target, outputText)
  }
}

describe('the tool worker loads', () => {
  it('from the emitted JavaScript, as `npm start` runs it (no tsx anywhere)', async () => {
    const app = join(temp, 'app')
    emitDist(join(app, 'dist'))
    writeFileSync(join(app, 'package.json'), '{"type":"module"}')
    symlinkSync(join(ROOT, 'node_modules'), join(app, 'node_modules'))
    const dist = join(app, 'dist')
    const emitted = readdirSync(join(dist, 'runner'))
    expect(emitted).toContain('worker.js')
    expect(emitted.filter((name) => !name.endsWith('.js'))).toEqual([])
    const { stdout } = await run(
      process.execPath,
      [
        PROBE,
        pathToFileURL(join(dist, 'runner/runner.js')).href,
        pathToFileURL(join(dist, 'tools/catalog.js')).href,
      ],
      { cwd: app, env: { ...process.env, NODE_OPTIONS: '' } },
    )
    expect(JSON.parse(stdout)).toEqual(EXPECTED)
  })

  it('from the TypeScript sources under the tsx CLI, as `npm run dev` runs them', async () => {
    const { stdout } = await run(
      join(ROOT, 'node_modules/.bin/tsx'),
      [
        PROBE,
        pathToFileURL(join(ROOT, 'src/runner/runner.ts')).href,
        pathToFileURL(join(ROOT, 'src/tools/catalog.ts')).href,
      ],
      { cwd: ROOT },
    )
    expect(JSON.parse(stdout)).toEqual(EXPECTED)
  })
})
