import { spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import { afterAll, describe, expect, it } from 'vitest'
import { diffTexts } from '../../../test/helpers/arbitraries/text-diff.js'
import { fuzzParameters, fuzzTimeout, scaledRuns } from '../../../test/helpers/fuzz/config.js'
import { textDiff } from './index.js'

// `unified` must be a patch GNU patch applies: applied to `before`, it gives `after` byte for byte.
// GNU patch runs as a subprocess, so the property runs 200 cases in `npm test` and 2,000 under
// `npm run fuzz` (FUZZ_RUNS=10000).

const PATCH = '/usr/bin/patch'
const dir = mkdtempSync(join(tmpdir(), 'text-diff-patch-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** Applies `diff` to `before` with GNU patch (`patch -s -f -o out before.txt < diff`). */
function gnuPatch(
  before: string,
  diff: string,
): { status: number | null; out: string; stderr: string } {
  const beforeFile = join(dir, 'before.txt')
  const outFile = join(dir, 'out.txt')
  writeFileSync(beforeFile, before)
  rmSync(outFile, { force: true })
  // -f: never ask (e.g. "Assume -R?"), apply exactly as given; -s: quiet; no backup files.
  const run = spawnSync(PATCH, ['-s', '-f', '--no-backup-if-mismatch', '-o', outFile, beforeFile], {
    input: diff,
    encoding: 'utf8',
  })
  if (run.error) {
    throw new Error(
      `${PATCH} could not run (${run.error.message}): install Debian's patch (npm test runs ` +
        'scripts/system-packages.sh, which installs it as root)',
    )
  }
  let out = ''
  try {
    out = readFileSync(outFile, 'utf8')
  } catch {
    out = '<no output file>'
  }
  return { status: run.status, out, stderr: `${run.stdout}${run.stderr}` }
}

function expectPatchGivesAfter(before: string, after: string): void {
  const { unified } = textDiff({ before, after })
  if (unified === '') {
    expect(after).toBe(before)
    return
  }
  const result = gnuPatch(before, unified)
  expect({ status: result.status, stderr: result.stderr }).toEqual({ status: 0, stderr: '' })
  expect(JSON.stringify(result.out)).toBe(JSON.stringify(after))
}

describe('text-diff unified output under GNU patch', () => {
  it('keeps CRLF so that patch applies it (issue 9 report)', () => {
    const before = 'one\r\ntwo\r\nthree\r\n'
    const after = 'one\r\n2\r\nthree\r\nfour\r\n'
    expect(textDiff({ before, after }).unified).toBe(
      '--- before\n+++ after\n@@ -1,3 +1,4 @@\n one\r\n-two\r\n+2\r\n three\r\n+four\r\n',
    )
    expectPatchGivesAfter(before, after)
  })

  it.each([
    ['only the line endings change', 'a\r\nb\r\n', 'a\nb\n'],
    ['mixed endings, one changed line', 'a\r\nb\nc\r\n', 'a\r\nB\nc\r\n'],
    ['a final newline is added', 'a\r\nb', 'a\r\nb\r\n'],
    ['a final newline is dropped', 'a\nb\n', 'a\nb'],
    ['a lone CR at the end without newline', 'x\r', 'x\r\n'],
    [
      'lines that look like diff syntax',
      '--- a\n+++ b\n@@ -1 +1 @@\n\\ x\n',
      '--- a\n+++ c\n@@ -1 +1 @@\n\\ y\n',
    ],
    ['from empty', '', 'x\r\ny'],
    ['to empty', 'x\ny\n', ''],
  ])('applies when %s', (_name, before, after) => {
    expectPatchGivesAfter(before, after)
  })

  it(
    'applied to before, gives after byte for byte (generated texts)',
    () => {
      fc.assert(
        fc.property(diffTexts, ({ before, after }) => expectPatchGivesAfter(before, after)),
        fuzzParameters('text-diff unified | GNU patch', scaledRuns(200)),
      )
    },
    fuzzTimeout(60_000),
  )
})
