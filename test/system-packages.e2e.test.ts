import { spawnSync } from 'node:child_process'
import {
  chmodSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { NGINX_BINARY } from '../src/devnet/nginx.js'

// scripts/system-packages.sh: the Debian packages the tests need, installed by `npm test`.

const ROOT = new URL('../', import.meta.url).pathname
const SCRIPT = readFileSync(join(ROOT, 'scripts/system-packages.sh'), 'utf8')
const isRoot = process.getuid?.() === 0
const dir = mkdtempSync(join(tmpdir(), 'system-packages-'))
chmodSync(dir, 0o755)
afterAll(() => rmSync(dir, { recursive: true, force: true }))

/** The script's table: package name → the file that shows it is installed. */
function table(script: string): Record<string, string> {
  const block = /^PACKAGES='\n([\s\S]*?)^'$/m.exec(script)?.[1] ?? ''
  return Object.fromEntries(
    block
      .split('\n')
      .filter((line) => line.trim())
      .map((line) => line.trim().split(/\s+/) as [string, string]),
  )
}

let copies = 0
/** Runs a copy of the script whose table is `lines`, as an unprivileged user when we are root. */
function run(
  lines: string,
  { args = [] as string[], env = {} as Record<string, string>, asUser = true } = {},
) {
  const file = join(dir, `system-packages-${copies++}.sh`)
  writeFileSync(file, SCRIPT.replace(/^PACKAGES='\n[\s\S]*?^'$/m, `PACKAGES='\n${lines}\n'`))
  chmodSync(file, 0o755)
  const [command, commandArgs] =
    isRoot && asUser
      ? ['/usr/bin/setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', '/bin/bash']]
      : ['/bin/bash', []]
  const result = spawnSync(command, [...commandArgs, file, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '/usr/bin:/bin', ...env },
  })
  return { status: result.status, stdout: result.stdout, stderr: result.stderr }
}

describe('scripts/system-packages.sh', () => {
  it('runs first in npm test (pretest), and .ci/run installs no package of its own', () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>
    }
    expect(pkg.scripts.pretest).toBe('bash scripts/system-packages.sh')
    const ci = readFileSync(join(ROOT, '.ci/run'), 'utf8')
    expect(ci).toMatch(/^npm test$/m)
    expect(ci).not.toMatch(/apt-get/)
  })

  it('lists the package of every system binary the tests run', () => {
    expect(table(SCRIPT)).toEqual({
      nginx: NGINX_BINARY,
      chromium: '/usr/bin/chromium',
      patch: '/usr/bin/patch',
      'redis-server': '/usr/bin/redis-server',
      postgresql: '/usr/lib/postgresql/*/bin/initdb',
      prometheus: '/usr/bin/promtool',
      podman: '/usr/bin/podman',
      runc: '/usr/sbin/runc',
      debootstrap: '/usr/sbin/debootstrap',
      'podman-compose': '/usr/bin/podman-compose',
    })
  })

  it('does nothing and prints nothing when every package is present', () => {
    expect(run('coreutils /bin/s*\nbash      /bin/bash')).toEqual({
      status: 0,
      stdout: '',
      stderr: '',
    })
  })

  it('--check exits 1 naming the missing packages', () => {
    const result = run(
      'bash /bin/bash\nno-such-pkg-a /nonexistent/a\nno-such-pkg-b /nonexistent/b*',
      {
        args: ['--check'],
      },
    )
    expect(result).toEqual({
      status: 1,
      stdout: '',
      stderr: 'missing Debian packages: no-such-pkg-a no-such-pkg-b\n',
    })
  })

  it('without root, names the missing packages and the command, and lets the run go on', () => {
    const result = run('bash /bin/bash\nno-such-pkg /nonexistent/bin')
    expect(result.status).toBe(0)
    expect(result.stdout).toBe('')
    expect(result.stderr).toBe(
      [
        'system-packages: the tests need these Debian packages, which are missing: no-such-pkg',
        'system-packages: cannot install them here (not root); install them with',
        '  sudo apt-get install -y no-such-pkg',
        'system-packages: until then the tests that use them fail.',
        '',
      ].join('\n'),
    )
  })

  it.runIf(isRoot)('as root without apt-get, says so instead of installing', () => {
    const bin = join(dir, 'bin')
    mkdirSync(bin, { recursive: true })
    symlinkSync('/bin/cat', join(bin, 'cat'))
    const result = run('no-such-pkg /nonexistent/bin', { env: { PATH: bin }, asUser: false })
    expect(result.status).toBe(0)
    expect(result.stderr).toContain('cannot install them here (no apt-get)')
    expect(result.stderr).toContain('  sudo apt-get install -y no-such-pkg\n')
  })
})
